# nn/ - layers, networks, optimizers, training and data, compiled into
# libdlaccel.so above the core (they use only the public API). Each area
# appends its files here.
# Networks and optimizers: layers, dla_net (graph, initialization,
# forward/predict, tables, summary, save/load) and the optimizers.
libdlaccel_la_SOURCES += \
	nn/nn.h nn/nn_error.c nn/shape.c nn/table.c nn/init.c nn/layer.c \
	nn/layer_input.c nn/layer_conv.c nn/layer_batchnorm.c nn/layer_norm.c \
	nn/layer_activation.c nn/layer_smooth.c \
	nn/layer_pool.c nn/layer_fc.c nn/layer_merge.c nn/layer_lstm.c nn/layer_bilstm.c nn/layer_recurrent.c nn/layer_state_ports.c \
	nn/layer_gru.c nn/layer_attention.c nn/layer_mask.c nn/layer_position.c nn/layer_embedding.c nn/layer_prelu.c nn/layer_crosschannel.c nn/recurrent_fn.c nn/layer_indexing.c nn/layer_resize.c nn/layer_crop.c nn/layer_depth_space.c nn/layer_attention_cross.c nn/ode_net.c \
	nn/net.c nn/net_edit.c nn/net_factors.c nn/net_init.c nn/net_run.c nn/net_accel.c nn/net_params.c nn/net_arch.c \
	nn/net_summary.c nn/net_io.c nn/optim_impl.h nn/optim.c nn/optim_grad.c nn/learn_rate.c \
	nn/optim_lbfgs.c
# Custom layers: the registry of user-defined types, and the op that runs
# one with a backward of its own.
libdlaccel_la_SOURCES += nn/layer_custom.h nn/layer_custom.c nn/layer_custom_op.c

# Data: IDX files (zlib), Fashion-MNIST, sequences and padding, the
# mini-batch queue, synthetic waveforms.
libdlaccel_la_SOURCES += nn/data_util.c nn/data_util.h nn/data_rng.c nn/data_rng.h \
	nn/data_idx.c nn/data_fmnist.c nn/data_seq.c nn/data_seq.h nn/data_mbq.c nn/data_mbq.h \
	nn/data_waveform.c
libdlaccel_la_CPPFLAGS += $(ZLIB_CFLAGS)
libdlaccel_la_LIBADD += $(ZLIB_LIBS)
# Generic datastores (arrayDatastore, fileDatastore, transform, combine,
# custom, subsets) and the joining of their observations.
libdlaccel_la_SOURCES += nn/datastore.h nn/datastore.c nn/datastore_join.c \
	nn/datastore_subset.c nn/datastore_array.c nn/datastore_file.c \
	nn/datastore_transform.c nn/datastore_combine.c nn/datastore_custom.c
# Image datastores: folder trees of PNG (libpng) and JPEG (libjpeg-turbo)
# files, decoded on reading threads, with augmentation.
libdlaccel_la_SOURCES += nn/data_image.h nn/data_image.c nn/data_image_scan.c \
	nn/data_image_read.c nn/data_image_decode.c
libdlaccel_la_CPPFLAGS += $(PNG_CFLAGS) $(JPEG_CFLAGS)
libdlaccel_la_LIBADD += $(PNG_LIBS) $(JPEG_LIBS)

# Training: trainnet and trainingOptions, the iteration table, the progress
# display (bar and metrics) and its SVG chart.
libdlaccel_la_SOURCES += nn/train_impl.h nn/train.c nn/train_options.c nn/train_table.c \
	nn/progress.c nn/chart.h nn/chart.c
# What trainnet checks before its first iteration (paths, class numbers).
libdlaccel_la_SOURCES += nn/train_check.c nn/train_seqtarget.c nn/train_population.c nn/predict.c
# Training in parallel (docs/parallel.md, "Training"): shares of the global
# mini-batch, the weighted combination of gradients and state, the
# broadcast of the initial network, and trainnet's workers.
libdlaccel_la_SOURCES += nn/spmd_impl.h nn/spmd_share.c nn/spmd_combine.c nn/spmd_overlap.c nn/spmd_state.c \
	nn/spmd_net.c nn/train_parallel.h nn/train_parallel.c nn/train_par_same.c nn/batch_share.c
