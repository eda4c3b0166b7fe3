# Dataset graph, node types, readers and file formats.
