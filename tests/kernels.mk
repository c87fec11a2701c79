# tests/kernels.mk
