# Tests of the slice layout.
