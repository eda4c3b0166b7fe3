# Tests of rebatch, auto-shard and distribution.
