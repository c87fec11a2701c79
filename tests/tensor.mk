# tests/tensor.mk
