# Tests of the dataset graph, nodes, readers and formats.
