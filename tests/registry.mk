# tests/registry.mk
