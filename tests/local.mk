# tests/ - cmocka binaries, one per module, speaking TAP. Each area keeps its
# own fragment so the lists stay short.
include tests/tensor.mk
include tests/kernels.mk
include tests/registry.mk
include tests/conv.mk
include tests/nnops.mk
include tests/loss.mk
include tests/plan.mk
include tests/trace.mk
include tests/data.mk
include tests/datastore.mk
include tests/net.mk
include tests/custom_layer.mk
include tests/train.mk
include tests/opencl.mk
include tests/hardening.mk
include tests/spmd.mk
include tests/kit.mk
