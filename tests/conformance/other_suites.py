def run(part, tf, tpusim, driver, workdir, seed):
    raise SystemExit("todo")
