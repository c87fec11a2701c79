# core/ - tensors, ops, kernels dispatch, device registry: libdlaccel.so
lib_LTLIBRARIES += libdlaccel.la
libdlaccel_la_CPPFLAGS = $(AM_CPPFLAGS) -DDLA_BUILDING_LIBRARY \
	-DDLACCEL_PLUGINS_DIR='"$(pluginsdir)"' $(JANSSON_CFLAGS)
# -ffp-contract=off: the random stream's normals (core/philox_stream.h) are
# defined with every operation rounded once. No OpenMP: the library must not
# load the OpenMP runtime before it has chosen its wait policy
# (core/omp_defaults.c); the cpu plugin brings it.
libdlaccel_la_CFLAGS = $(AM_CFLAGS) -ffp-contract=off
libdlaccel_la_LDFLAGS = -version-info 0:0:0 -no-undefined
libdlaccel_la_LIBADD = $(JANSSON_LIBS) $(LIBS)
libdlaccel_la_SOURCES = \
	core/alloc.c core/alloc.h \
	core/handle.c core/handle.h \
	core/error.c core/error.h \
	core/log.c core/log.h core/env_choice.h \
	core/breadcrumb.c core/breadcrumb.h \
	core/version.c \
	core/kernels.h \
	core/device.h \
	core/manifest.c core/manifest.h core/json_read.c core/json_read.h core/file_special.h \
	core/registry.c core/registry.h \
	core/omp_defaults.c core/omp_defaults.h \
	core/blas_defaults.c core/blas_defaults.h core/openblas_core.h \
	core/format.c core/format.h \
	core/philox.c core/philox.h core/philox_stream.h \
	core/scope.c core/scope.h \
	core/tensor.c core/tensor.h \
	core/view.c \
	core/create.c \
	core/transfer.c \
	core/launch.c core/launch.h core/launch_dense.c core/kernel_views.h \
	core/ops_elementwise.c \
	core/ops_reduce.c \
	core/ops_matmul.c \
	core/op.h core/ops.h core/ops_broadcast.c \
	core/hooks.c core/hooks.h core/op_run.c \
	core/tape.c core/tape.h core/feval.c core/gradient.c core/derivatives.c core/attention.c core/attention.h core/resize.c \
	core/trace.h core/trace_record.c core/trace_replay.c core/trace_api.c core/accel.c core/accel_advice.h \
	core/op_registry.c core/trace_file.c core/crc32c.c core/crc32c.h \
	core/ops_loss.c core/ops_ctc.c core/ops_embed.c core/ops_onehot.c core/ops_shape.c core/ops_compare.c \
	core/ops_nn.h core/ops_activation.c core/ops_crosschannel.c core/ops_norm.c core/ops_norm_grad.c core/ops_pool.c core/ops_dropout.c core/ops_fc.c \
	core/ops_conv.c \
	core/ode45.c core/ode45.h core/ode45_adjoint.c \
	core/plan.h core/plan_impl.h core/plan_capture.c core/plan_lower.c core/plan_memory.c \
	core/plan_exec.c \
	core/plan_print.c \
	core/spmd.c core/spmd.h core/spmd_wait.c core/spmd_check.c core/spmd_check.h \
	core/spmd_coll.c core/spmd_coll.h core/spmd_device.c core/spmd_device.h core/spmd_async.c core/spmd_queue.c core/spmd_watch.c
