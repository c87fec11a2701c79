# examples/

# ---- examples/plugin-hello: the minimal plugin of docs/plugins.md --------
# Built for `make check` as a libtool module and never installed: it is not
# in DLA_PLUGINS, and its manifest sits in its own build folder, so only
# DLACCEL_PLUGIN_PATH=<build>/examples/plugin-hello brings it in. (Its own
# Makefile, for a third party, is examples/plugin-hello/Makefile.)
check_LTLIBRARIES += examples/plugin-hello/libdlaccel-hello.la
examples_plugin_hello_libdlaccel_hello_la_SOURCES = examples/plugin-hello/hello.c
examples_plugin_hello_libdlaccel_hello_la_LDFLAGS = -module -avoid-version -shared -no-undefined \
	-rpath /nowhere
EXTRA_DIST += examples/plugin-hello/manifest.json.in examples/plugin-hello/tensor_on_hello.sh

examples/plugin-hello/hello.json: $(top_srcdir)/examples/plugin-hello/manifest.json.in Makefile
	$(AM_V_GEN)$(MKDIR_P) examples/plugin-hello && \
	$(SED) -e 's|@LIBRARY_PATH@|$(abs_builddir)/examples/plugin-hello/.libs/libdlaccel-hello.so|' \
	  $< > $@
CLEANFILES += examples/plugin-hello/hello.json

# The tensor suite on the hello device. Its log needs the manifest and the
# module; the prerequisites are added through a variable so they extend
# automake's rule for the log instead of replacing it (and check_DATA
# belongs to tests/).
TESTS += examples/plugin-hello/tensor_on_hello.sh
dla_hello_test_log = examples/plugin-hello/tensor_on_hello.sh.log
$(dla_hello_test_log): examples/plugin-hello/hello.json examples/plugin-hello/libdlaccel-hello.la

# As a third party builds it: dlaccel installed into a temporary DESTDIR,
# then examples/plugin-hello/Makefile (plain make, pkg-config alone) builds,
# checks (dlaccel check-plugin) and installs hello from that copy. Its log
# needs testmem's manifest (every manifest's declared ABI is checked).
TESTS += examples/plugin-hello/install_and_build.sh
EXTRA_DIST += examples/plugin-hello/Makefile examples/plugin-hello/install_and_build.sh
dla_hello_install_log = examples/plugin-hello/install_and_build.sh.log
$(dla_hello_install_log): tests/plugins.d/testmem.json
# ---- end of examples/plugin-hello ----------------------------------------

# ---- examples/quickstart: devices, then a timed product on the default one --
noinst_PROGRAMS += examples/quickstart
examples_quickstart_SOURCES = examples/quickstart.c
examples_quickstart_LDADD = libdlaccel.la -lm
# ---- end of examples/quickstart -------------------------------------------

# ---- examples/accelerate_*: dla_accelerate as MATLAB's dlaccelerate page --
# accelerate_check: baked random numbers against an RNG slot under
# CheckMode "tolerance" (myUnsupportedFun, mySupportedFun); accelerate_loss:
# a model loss with gradients in a training loop, its trace saved, loaded
# and printed; accelerate_net: modelLoss(net, X, T) with the network as a
# ctx kind; lstm_function: a recurrent model function (dla_lstm, then
# fullyconnect and mse) accelerated and trained with adamupdate. The smoke
# test runs them and checks what they print.
noinst_PROGRAMS += examples/accelerate_check examples/accelerate_loss examples/accelerate_net \
	examples/lstm_function
examples_lstm_function_SOURCES = examples/lstm_function.c
examples_lstm_function_LDADD = libdlaccel.la -lm
examples_accelerate_net_SOURCES = examples/accelerate_net.c
examples_accelerate_net_LDADD = libdlaccel.la -lm
examples_accelerate_check_SOURCES = examples/accelerate_check.c
examples_accelerate_check_LDADD = libdlaccel.la
examples_accelerate_loss_SOURCES = examples/accelerate_loss.c
examples_accelerate_loss_LDADD = libdlaccel.la -lm
TESTS += examples/accelerate_examples.sh
EXTRA_DIST += examples/accelerate_examples.sh
# ---- end of examples/accelerate_* ------------------------------------------

# ---- examples/pinn: higher derivatives in an accelerated loss --------------
# A physics-informed network: the Laplacian of a tanh MLP by dla_laplacian
# (recorded sweeps, enable_higher_derivatives), trained to solve a Poisson
# problem on the line or the square. The smoke test trains both briefly
# and checks what they print.
noinst_PROGRAMS += examples/pinn
examples_pinn_SOURCES = examples/pinn.c examples/pinn_model.h
examples_pinn_LDADD = libdlaccel.la -lm
TESTS += examples/pinn_example.sh
EXTRA_DIST += examples/pinn_example.sh
# ---- end of examples/pinn ---------------------------------------------------

# ---- examples/segmentation: U-Net's crop-and-concatenate skip ---------------
# Pixel classification of synthetic images with crop2dLayer and
# depthToSpace2dLayer, trained by trainnet ("crossentropy" over pixels).
noinst_PROGRAMS += examples/segmentation
examples_segmentation_SOURCES = examples/segmentation.c
examples_segmentation_LDADD = libdlaccel.la -lm
TESTS += examples/segmentation_example.sh
EXTRA_DIST += examples/segmentation_example.sh
# ---- end of examples/segmentation -------------------------------------------
# ---- examples/autoencoder: transposed convolutions with trainnet -----------
# A convolutional autoencoder on Fashion-MNIST ("mse" on the image itself);
# the smoke test trains it on 2000 images and checks it beats the mean image.
noinst_PROGRAMS += examples/autoencoder
examples_autoencoder_SOURCES = examples/autoencoder.c
examples_autoencoder_LDADD = libdlaccel.la -lm
TESTS += examples/autoencoder_example.sh
EXTRA_DIST += examples/autoencoder_example.sh
# ---- end of examples/autoencoder --------------------------------------------

# ---- examples/volumes: 3-D layers with trainnet ----------------------------
# A 3-D convolutional network classifies synthetic 16^3 volumes (ball,
# shell, cube); the smoke test trains it briefly and checks its accuracy.
noinst_PROGRAMS += examples/volumes
examples_volumes_SOURCES = examples/volumes.c examples/volume_net.h examples/example_cli.h
examples_volumes_LDADD = libdlaccel.la -lm
TESTS += examples/volumes_example.sh
EXTRA_DIST += examples/volumes_example.sh
# ---- end of examples/volumes -------------------------------------------------

# ---- examples/datastores: trainnet over generic datastores -----------------
# CSV files read by a file datastore's read function, normalized by a
# transform, combined with an array datastore of labels, shuffled, split by
# subset, and trained on with trainnet; the smoke test checks its accuracy.
noinst_PROGRAMS += examples/datastores
examples_datastores_SOURCES = examples/datastores.c examples/example_cli.h examples/recordings.h
examples_datastores_LDADD = libdlaccel.la -lm
TESTS += examples/datastores_example.sh
EXTRA_DIST += examples/datastores_example.sh
# examples/sequence_datastore: the same recordings of different lengths, one
# CSV file each, padded per mini-batch by trainnet and classified by an LSTM.
noinst_PROGRAMS += examples/sequence_datastore
examples_sequence_datastore_SOURCES = examples/sequence_datastore.c examples/example_cli.h \
	examples/recordings.h
examples_sequence_datastore_LDADD = libdlaccel.la -lm
TESTS += examples/sequence_datastore_example.sh
EXTRA_DIST += examples/sequence_datastore_example.sh
# ---- end of examples/datastores ---------------------------------------------

# ---- examples/tokens: a transformer encoder on token sequences ------------
# Word and position embeddings, self-attention, a feed-forward block and
# global max pooling classify synthetic token sequences of varying length
# by the order of two tokens; the smoke test trains it and checks its
# accuracy.
noinst_PROGRAMS += examples/tokens
examples_tokens_SOURCES = examples/tokens.c examples/token_net.h examples/example_cli.h
examples_tokens_LDADD = libdlaccel.la -lm
TESTS += examples/tokens_example.sh
EXTRA_DIST += examples/tokens_example.sh
# ---- end of examples/tokens --------------------------------------------------

# ---- examples/transfer: transfer learning ------------------------------------
# The digit CNN trained on five Fashion-MNIST classes, saved and loaded, its
# classifier replaced (dla_net_replace_layer) and its convolutions frozen,
# then trained on a few images of the other five, beside the same network
# from scratch; the smoke test checks that the frozen layers come out bit
# for bit, that the transferred network classifies above 75%, and that
# `dlaccel net` shows the saved network with those layers frozen.
noinst_PROGRAMS += examples/transfer
examples_transfer_SOURCES = examples/transfer.c examples/digit_net.h
examples_transfer_LDADD = libdlaccel.la -lm
TESTS += examples/transfer_example.sh
EXTRA_DIST += examples/transfer_example.sh
# ---- end of examples/transfer ------------------------------------------------

# ---- examples/cnn_fmnist, waveform, forecast, slice_layer: training ------
# cnn_fmnist: the dlaccelerate page's custom training loop on Fashion-MNIST
# (the README's main job, through tools/quickstart.sh); waveform: trainnet
# with an accelerated weighted cross-entropy on imbalanced sequences;
# forecast: an LSTM trained to predict the next step, forecasting in open
# and closed loop with dla_net_predict_state;
# slice_layer: the custom layer with reshape and channel-wise separable
# convolutions, forward and backward. The smoke test runs each at small
# size (--small) and checks what it prints.
noinst_PROGRAMS += examples/cnn_fmnist examples/waveform examples/forecast examples/slice_layer
examples_cnn_fmnist_SOURCES = examples/cnn_fmnist.c examples/digit_net.h examples/mobile_net.h
examples_cnn_fmnist_LDADD = libdlaccel.la -lm
examples_waveform_SOURCES = examples/waveform.c
examples_waveform_LDADD = libdlaccel.la -lm
examples_forecast_SOURCES = examples/forecast.c
examples_forecast_LDADD = libdlaccel.la -lm
examples_slice_layer_SOURCES = examples/slice_layer.c
examples_slice_layer_LDADD = libdlaccel.la -lm
TESTS += examples/training_examples.sh
EXTRA_DIST += examples/training_examples.sh
# ---- end of examples/cnn_fmnist, waveform, forecast, slice_layer -----------

# ---- examples/parallel_training: the seed page's parallel loop (issue 15) --
# mpirun -np 2 build/examples/parallel_training; tests/parallel_train.sh
# runs it with --small.
noinst_PROGRAMS += examples/parallel_training
examples_parallel_training_SOURCES = examples/parallel_training.c examples/digit_net.h
examples_parallel_training_LDADD = libdlaccel.la -lm
# ---- end of examples/parallel_training -------------------------------------
# ---- examples/custom_layer: a layer type of the user's own (issue 18) -----
# The MATLAB Answers page's layer (slice_diff_layer.h) registered as a layer
# type and trained with trainnet in a small network; saved, loaded,
# accelerated, its gradients against finite differences; --bench compares
# it with the free function of slice_layer. The smoke test runs it --small.
noinst_PROGRAMS += examples/custom_layer
examples_custom_layer_SOURCES = examples/custom_layer.c examples/slice_diff_layer.h
examples_custom_layer_LDADD = libdlaccel.la -lm
TESTS += examples/custom_layer_example.sh
EXTRA_DIST += examples/custom_layer_example.sh
# ---- end of examples/custom_layer ------------------------------------------
EXTRA_DIST += examples/example_clock.h examples/example_args.h

# ---- examples/neural_ode: a neural ODE fitted to a trajectory --------------
# MATLAB's "Dynamical System Modeling Using Neural ODE": dla_ode45 makes the
# data and solves the model in the loss; the smoke test trains it briefly,
# eager and accelerated, and checks what it prints.
noinst_PROGRAMS += examples/neural_ode
examples_neural_ode_SOURCES = examples/neural_ode.c
examples_neural_ode_LDADD = libdlaccel.la -lm
TESTS += examples/neural_ode_example.sh
EXTRA_DIST += examples/neural_ode_example.sh
# ---- end of examples/neural_ode ---------------------------------------------

# ---- examples/ctc_sequences: a recurrent network trained with dla_ctc -----
# Label sequences not aligned with the input steps, learned through the CTC
# loss in an accelerated custom loop; the smoke test trains it and checks
# that greedy decoding gets the label sequences of a fresh batch.
noinst_PROGRAMS += examples/ctc_sequences
examples_ctc_sequences_SOURCES = examples/ctc_sequences.c
examples_ctc_sequences_LDADD = libdlaccel.la -lm
TESTS += examples/ctc_example.sh
EXTRA_DIST += examples/ctc_example.sh
# ---- end of examples/ctc_sequences ------------------------------------------
