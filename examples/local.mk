# examples/
