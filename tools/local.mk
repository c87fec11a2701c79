# tools/
