# Rebatch, auto-shard, distributed dataset/iterator, InputContext.
