# Tests of values, ReplicaContext, TPUStrategy, reduce, variables.
