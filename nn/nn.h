/*
 * nn.h - what the files of nn/ share: the layer and network structures,
 * the layer kinds' table of functions, the tables, and the error bridge.
 *
 * nn/ sits above the core: it includes only <dlaccel.h> and uses only the
 * public API (nn_error.c wraps its error and allocation functions).
 */
#ifndef DLA_NN_H
#define DLA_NN_H

#include <dlaccel.h>
#include <stdarg.h>

/* ------------------------------------------------------------------ errors */

/* Sets the thread's last error (status and message); returns status. */
dla_status dla__nn_fail(dla_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An error tensor carrying the thread's last error, handed to the caller as
 * ops hand theirs (to the open scope, if any). */
dla_tensor *dla__nn_error_tensor(void);
/* Hands a +1 reference to the caller as ops do (to the open scope, if any). */
dla_tensor *dla__nn_return(dla_tensor *t);

/* DLA_OK when every schedule of the list s is valid (learn_rate.c);
 * otherwise the error, for trainingOptions' checks. max_epochs: the whole
 * training of a period of 0 (0: unknown). */
dla_status dla__learn_rate_check(const dla_learn_rate_schedule *s, int max_epochs);
/* dla_learn_rate_in_training with its errors naming fn: trainnet's say
 * "LearnRateSchedule", not a function its caller never called. */
double dla__learn_rate_named(const char *fn, const dla_learn_rate_schedule *s, double initial,
                             int epoch, int iteration, long long iterations_per_epoch,
                             int max_epochs);

/* Host memory of nn/, through the library's allocation hook. */
void *dla__nn_malloc(size_t size);
void *dla__nn_calloc(size_t count, size_t size);
void *dla__nn_realloc(void *p, size_t size);
void dla__nn_free(void *p);
char *dla__nn_strdup(const char *s);
/* The folder of path into buf: "." for a bare name, "/" for one in the
 * root. 0 when it does not fit in size bytes. */
int dla__nn_folder_of(const char *path, char *buf, size_t size);

/* A worker's share of the whole mini-batch (batch_share.c): mine
 * observations of whole, before of them ahead of it. Set on the calling
 * thread by trainnet "parallel" around its step (NULL clears; get gives
 * NULL when none is set); dla__share_dropout is dla_dropout of x, its
 * mask drawn as for the whole batch when x is the share (its B dim mine
 * long), so a worker drops what one process would. */
typedef struct dla__batch_share {
    int64_t before, mine, whole;
} dla__batch_share;
void dla__batch_share_set(const dla__batch_share *s);
const dla__batch_share *dla__batch_share_get(void);
dla_tensor *dla__share_dropout(dla_tensor *x, double prob);
/* The same with the observations along dim b (1-based) of x, formatted or
 * not (0: none, a plain dla_dropout). */
dla_tensor *dla__share_dropout_along(dla_tensor *x, double prob, int b);

/* Makes dev current (NULL: nothing changes) and returns the device to give
 * back to dla__nn_device_restore. What a layer or a network makes beside
 * values it has (zeros, a state, statistics) must be on their device:
 * made on the current one, a network moved with dla_net_to_device failed
 * its next op across devices. */
dla_device *dla__nn_device_use(dla_device *dev);
void dla__nn_device_restore(dla_device *prev);

/* ------------------------------------------------------------------ shapes */

typedef struct dla__shape {
    int ndims;
    int64_t dims[DLA_MAX_DIMS];
    char format[DLA_MAX_DIMS + 1];
} dla__shape;

/* The shape of t (dims as it reports them). */
void dla__shape_of(const dla_tensor *t, dla__shape *s);
/* The size of the dim labelled c (the first one for 'S'); 0 when absent. */
int64_t dla__shape_dim(const dla__shape *s, char c);
/* How many dims carry label c. */
int dla__shape_count(const dla__shape *s, char c);
/* "24(S) x 24(S) x 20(C) x 1(B)" into buf. */
void dla__shape_str(const dla__shape *s, char *buf, size_t size);
/* Nonzero when a and b have the same dims, trailing ones aside (a
 * gradient of a view, or a sum over the last dim, may carry them). */
int dla__same_dims(const dla_tensor *a, const dla_tensor *b);
/* "5x5x1x20" into buf. */
void dla__dims_text(int ndims, const int64_t *dims, char *buf, size_t size);
/* "[a b c]" (bracket) or "a b c": the n numbers of v, as a layer's
 * summary shows its stride and padding. */
void dla__list_text(int n, const int64_t *v, int bracket, char *buf, size_t size);
/* Display columns of s's first n bytes: UTF-8 continuation bytes take
 * none (a table padded by bytes lost a column per accented letter). */
int dla__text_columns(const char *s, size_t n);

/* ------------------------------------------------------------------ tables */

struct dla_table {
    uint32_t magic; /* DLA__HANDLE_TABLE; DEAD once freed (docs/checks.md) */
    int count, cap;
    char **layer;
    char **param;
    dla_tensor **values;
    double *lr_factor;
    double *l2_factor;
    int owned_by_net;
};

/* Appends a row (value retained, may be NULL while building). Returns its
 * index, or -1 when out of memory (message set). */
int dla__table_add(dla_table *t, const char *layer, const char *param, dla_tensor *value,
                   double lr_factor, double l2_factor);
/* Releases the rows (not the struct). */
void dla__table_clear(dla_table *t);
/* Checks that v could replace row i (dims, dtype); fn names the caller. */
dla_status dla__table_check(const char *fn, const dla_table *t, int i, const dla_tensor *v);
/* DLA_ERR_INVALID_ARGUMENT, naming fn, the row and both devices, when v
 * is on another device than row i's value. */
dla_status dla__table_check_device(const char *fn, const dla_table *t, int i,
                                   const dla_tensor *v);
/* Copies src's rows into an empty dst (values retained). */
dla_status dla__table_copy(dla_table *dst, const dla_table *src);
/* Removes (and releases) every row of layer, keeping the others' order. */
void dla__table_drop_layer(dla_table *t, const char *layer);

/* A registered custom layer type (nn/layer_custom.c). */
typedef struct dla__custom_type dla__custom_type;

/* -------------------------------------------------------------- properties */

/* The options of every layer kind, in one record so that the architecture
 * reads and writes through one table of fields per kind (nn/layer_kinds.c). */
#define DLA__STR 40 /* the longest: "recurrent-bias-after-multiplication" */
typedef struct dla__props {
    int64_t size[4];     /* FilterSize, PoolSize, InputSize [h w c] or [h w d c], resize OutputSize */
    int64_t count;       /* NumFilters, OutputSize, NumHiddenUnits, NumInputs, InputSize */
    int64_t channels;    /* NumChannels, InputSize of fc/lstm (0: auto) */
    int64_t stride[3];
    int64_t dilation[3];
    int64_t padding[6];  /* before and after dim i in [2i], [2i + 1] */
    int64_t dim;         /* concatenation Dim, MinLength */
    double scale;        /* leakyRelu Scale, dropout Probability, BN Epsilon */
    double decay[3];     /* BN MeanDecay, VarianceDecay; resize Scale */
    char mode[DLA__STR];     /* PaddingMode, OutputMode */
    char option[DLA__STR];   /* Normalization, PaddingValue */
    char option2[DLA__STR];  /* NormalizationDimension */
    char init[3][DLA__STR];  /* initializers, in the kind's order */
    /* A recurrent layer's HasStateInputs and HasStateOutputs (0 or 1):
     * its states as input ports after "in", and as output ports after
     * "out" (nn/layer_state_ports.c). */
    int64_t state_io[2];
    /* A custom layer's properties (dla_layer_type), in its type's order:
     * its kind's fields point here, so the architecture reads and writes
     * them as it does the built-in options. */
    double custom[DLA_LAYER_MAX_PROPERTIES];
    /* Its registration (set by dla__layer_new from the kind; not saved). */
    const struct dla__custom_type *custom_type;
} dla__props;

typedef enum dla__field_type { DLA__F_INT, DLA__F_DOUBLE, DLA__F_STRING } dla__field_type;

/* One option as the architecture JSON names it (MATLAB's property names). */
typedef struct dla__field {
    const char *key;
    dla__field_type type;
    size_t offset; /* in dla__props */
    int count;     /* array length for ints and doubles (1: a number) */
} dla__field;

/* ------------------------------------------------------------------ layers */

typedef enum dla__param_kind { DLA__LEARNABLE, DLA__STATE, DLA__FIXED, DLA__PARAM_KIND_COUNT } dla__param_kind;

/* Where initialization puts a layer's parameters. */
typedef struct dla__param_sink dla__param_sink;
/* Adds a parameter: the sink keeps value (it takes the caller's reference).
 * While a network is being loaded, value is NULL and the sink takes the
 * saved tensor of that name, checking that it has dims/ndims. l2_factor is
 * the layer's default; a row of the same name from before (a copy, a
 * re-initialization) keeps its own learn-rate and L2 factors instead. */
dla_status dla__param_add(dla__param_sink *sink, const char *name, dla__param_kind kind,
                          dla_tensor *value, int ndims, const int64_t *dims, double l2_factor);
/* dla__param_add for a parameter with one column per observation after a
 * batch (an LSTM's H x N state; dims[1] is the initial count, 1): a value
 * kept from before or saved is taken with any number of columns, so a copy,
 * a re-initialization and save/load keep the state of a batch exactly. */
dla_status dla__param_add_batched(dla__param_sink *sink, const char *name, dla__param_kind kind,
                                  dla_tensor *value, int ndims, const int64_t *dims, double l2_factor);
/* The table of kind being filled (custom layers look for names taken). */
const dla_table *dla__param_sink_table(const dla__param_sink *sink, dla__param_kind kind);
/* Nonzero while loading: initializers must not draw random numbers. */
int dla__param_loading(const dla__param_sink *sink);
/* The dtype parameters are made in. */
dla_dtype dla__param_dtype(const dla__param_sink *sink);

/* Parameters (learnables and state) one layer may have. */
#define DLA__MAX_PARAMS DLA_LAYER_MAX_PARAMS

/* Output ports one layer may have ("out", "hidden", "cell"). */
#define DLA__MAX_OUTPUTS 3

/* One layer's run: its inputs, its parameters in the order it added them,
 * and where its output and its new state values go. */
typedef struct dla__call {
    int training;
    int nx;
    dla_tensor *const *x;
    dla_tensor *const *p;
    dla_tensor *y;
    /* Output ports 2.. of a layer with several (HasStateOutputs: "hidden",
     * "cell"); y is port 1, "out". */
    dla_tensor *y_more[DLA__MAX_OUTPUTS - 1];
    dla_tensor *new_state[DLA__MAX_PARAMS]; /* for its state parameters, in order */
    const dla_layer *layer;   /* the layer run (custom layers read their type there) */
} dla__call;

typedef struct dla__layer_kind {
    const char *type;         /* "convolution2d": JSON and dla_net_layer_type */
    const char *display;      /* "2-D Convolution" */
    const char *default_name; /* "conv" */
    const dla__field *fields; /* ends with key NULL */
    int is_input;             /* no input ports: feeds a network input */
    int multi_input;          /* props.count input ports ("in1".."inN") */
    /* With props.dim 1 (HasPaddingMaskInput) a second port, "mask", after
     * "in" (nn/layer_mask.c). */
    int mask_port;
    /* A kind whose second input port is "ref" beside "in": always
     * (crop2dLayer), or with props.dim 1 (a resize layer's
     * EnableReferenceInput) when optional_ref is set. */
    int ref_port;
    int optional_ref;
    /* The names of the input ports of a kind whose ports are named
     * otherwise (attentionLayer's "query", "key", "value", "mask"), the
     * first nin of them in use, and the port a "mask" among them
     * describes (mask_of); NULL for the others. */
    const char *const *in_names;
    int mask_of;
    /* The number of input ports for these options, for a kind not
     * counted by the flags above; NULL for the others. */
    int (*count_inputs)(const dla__props *p);
    /* A recurrent kind's states (2: hidden and cell; 1: hidden): with
     * props.state_io[0] (HasStateInputs) input ports "in", "hidden"
     * ("cell"); with props.state_io[1] (HasStateOutputs) output ports
     * "out", "hidden" ("cell"). 0: no such ports. */
    int state_ports;
    /* Validates the options; sets the message and returns the status. */
    dla_status (*check)(const dla__props *p, const char *name);
    /* Creates the parameters for these input shapes. */
    dla_status (*init)(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink);
    /* Computes c->y (and c->y_more for a layer of several output ports)
     * and c->new_state (in training; in inference a state
     * inference changes, a recurrent layer's, for dla_net_predict_state);
     * sticky errors allowed. */
    dla_status (*forward)(const dla__props *p, dla__call *c);
    /* MATLAB's description column, for these input shapes (may be NULL
     * before initialization). */
    void (*describe)(const dla__props *p, const dla__shape *in, char *buf, size_t size);
    /* Input layers: the shape of one observation (batch 1). */
    void (*example)(const dla__props *p, dla__shape *s);
    /* The initial value of state parameter k (for dla_net_reset_state);
     * NULL when states keep their value. */
    dla_tensor *(*initial_state)(const dla__props *p, int k, dla_tensor *current);
    /* A custom layer type's registration; NULL for the built-in kinds. */
    const dla__custom_type *custom;
} dla__layer_kind;

struct dla_layer {
    uint32_t magic; /* DLA__HANDLE_LAYER; DEAD once freed (docs/checks.md) */
    int owned;      /* given to a network, which frees it */
    const dla__layer_kind *kind;
    char *name;
    int nin;  /* input ports */
    int nout; /* output ports (1, or 1 + states with HasStateOutputs) */
    dla__props props;
    dla_tensor *given[2]; /* values given in the options (statistics) */
    dla_status status;    /* an error layer: its options were refused */
    char *message;
    /* Set by initialization: output port 1's shape, then the others'. */
    dla__shape out;
    dla__shape out_more[DLA__MAX_OUTPUTS - 1];
    int nparams;
    struct {
        dla__param_kind kind;
        int row;
    } param[DLA__MAX_PARAMS];
};

/* A layer of kind with props (validated; an error layer otherwise, also
 * when pre, the status of reading the options, is an error: the thread's
 * last error is its message). NULL only when out of memory. */
dla_layer *dla__layer_new(const dla__layer_kind *kind, const char *name, int nin,
                          const dla__props *props, dla_status pre);
/* DLA_OK when lo <= v <= hi; otherwise an error for the property prop of
 * layer name of type: "must be positive" (lo 1) or ">= 0" (lo 0) when
 * below, "is too large (at most hi)" when above (issue 17: 1e12 is not
 * "not positive"). */
dla_status dla__layer_size(const char *type, const char *name, const char *prop, int64_t v,
                           int64_t lo, int64_t hi);
/* The kind of type name, built-in or registered (dla_layer_type_register);
 * NULL when unknown. */
const dla__layer_kind *dla__layer_kind_find(const char *type);
/* A registered custom type's kind by name; NULL when none. */
const dla__layer_kind *dla__custom_kind_find(const char *type);
/* The input ports of a layer of kind with props, as the architecture
 * reader makes it. */
int dla__kind_inputs(const dla__layer_kind *kind, const dla__props *p);
/* Copies s into a props string field, checking its length. */
dla_status dla__props_string(char *dst, const char *s, const char *fallback, const char *what);

/* The dims of a parameter with one value a channel of input shape in (c
 * channels), as MATLAB gives batch normalization's Offset: a 1 for each
 * "S" dim, then c (1x1xC for "SSCB"), Cx1 without "S" dims; returns the
 * count (at most 4). */
int dla__channel_param_dims(const dla__shape *in, int64_t c, int64_t *dims);
/* A normalization layer's learnables Offset and Scale, one per channel of
 * input shape in (its NumChannels checked against it), with its
 * initializers, in the dims MATLAB gives them: 1x1xC after two S dims, 1xC
 * after one, Cx1 without; the dims (at most 4) in dims and *nd, for
 * parameters of the same shape. what names the layer in the message when
 * the input has no "C" dim. */
dla_status dla__norm_offset_scale(const dla_layer *l, const char *what, const dla__shape *in,
                                  dla__param_sink *sink, int64_t *dims, int *nd);

/* ------------------------------------------------------ recurrent layers */

/* One run of a recurrent layer (layer_recurrent.c): the input projection
 * of every step, wx (rows x nb x nt), and the steps' hidden states kept
 * for OutputMode "sequence". */
typedef struct dla__recurrent {
    dla_tensor *wx;
    int64_t rows, nb, nt;
    dla_tensor **steps; /* NULL for "last" */
} dla__recurrent;
/* Checks c's input ("CBT" or "CB") and its nstates states (c->p[3..]:
 * one column or one per observation), and computes c->p[0] x + bias
 * (NULL: none) for every step, unless rows is 0 (the caller projects each
 * step itself; r->wx NULL). On failure c->y is the error. */
dla_status dla__recurrent_begin(const char *type, dla__call *c, int nstates, int64_t rows,
                                dla_tensor *bias, dla__recurrent *r);
/* State k (c->p[3 + k]) without labels. */
dla_tensor *dla__recurrent_state(const dla__call *c, int k);
/* Rows [k*h, (k+1)*h) of z: gate k. */
dla_tensor *dla__recurrent_gate(dla_tensor *z, int k, int64_t h);
/* Step t's projection, rows x nb. */
dla_tensor *dla__recurrent_input(const dla__recurrent *r, int64_t t);
/* Room for every step's hidden state when p's OutputMode is "sequence". */
dla_status dla__recurrent_keep_steps(const char *type, const dla__props *p, dla__call *c,
                                     dla__recurrent *r);
/* c->y from the steps ("sequence", "CBT") or states[0] ("last", "CB");
 * the new states are states[0..nstates-1]. */
dla_status dla__recurrent_end(const dla__props *p, dla__call *c, dla__recurrent *r,
                              int nstates, dla_tensor *const *states);
/* lstmLayer's options, checks, parameters and run, for one direction
 * (lstm) or two (bilstm: 8H rows, the backward direction's after the
 * forward one's, a 2H state and output). */
extern const dla__field dla__lstm_fields[];
dla_status dla__lstm_check(const char *type, const dla__props *p, const char *name);
dla_status dla__lstm_init(const char *type, int dirs, const dla_layer *l, const dla__shape *in,
                          dla__param_sink *sink);
dla_status dla__lstm_forward(const char *type, int dirs, const dla__props *p, dla__call *c);
dla_layer *dla__lstm_new(const dla__layer_kind *kind, int64_t num_hidden_units,
                         const dla_lstm_layer_options *opts);
/* Zeros of the current state's rows x 1: a recurrent layer's initial
 * state. */
dla_tensor *dla__recurrent_initial_state(const dla__props *p, int k, dla_tensor *current);
/* Nonzero for a recurrent kind (its state's columns follow the batch,
 * and trainnet resets it between batches). */
int dla__kind_is_recurrent(const dla__layer_kind *kind);

/* Every kind, for loading by type name. */
extern const dla__layer_kind dla__kind_image_input, dla__kind_sequence_input, dla__kind_conv1d,
    dla__kind_conv2d, dla__kind_batchnorm, dla__kind_relu, dla__kind_leakyrelu, dla__kind_dropout,
    dla__kind_softmax, dla__kind_flatten, dla__kind_maxpool2d, dla__kind_avgpool2d,
    dla__kind_maxpool1d, dla__kind_avgpool1d, dla__kind_gconv2d, dla__kind_multiplication,
    dla__kind_depth_concatenation, dla__kind_clipped_relu, dla__kind_spatial_dropout,
    dla__kind_gmaxpool1d, dla__kind_gavgpool1d, dla__kind_gmaxpool2d, dla__kind_gavgpool2d,
    dla__kind_fc, dla__kind_addition, dla__kind_concatenation, dla__kind_lstm, dla__kind_tanh,
    dla__kind_sigmoid, dla__kind_swish, dla__kind_elu, dla__kind_gelu, dla__kind_layernorm,
    dla__kind_groupnorm, dla__kind_instancenorm, dla__kind_feature_input, dla__kind_tconv1d,
    dla__kind_tconv2d, dla__kind_self_attention, dla__kind_gru, dla__kind_sinusoidal,
    dla__kind_position_embedding, dla__kind_resize2d, dla__kind_bilstm, dla__kind_image3d_input,
    dla__kind_conv3d, dla__kind_tconv3d, dla__kind_maxpool3d, dla__kind_avgpool3d,
    dla__kind_gmaxpool3d, dla__kind_gavgpool3d, dla__kind_word_embedding, dla__kind_prelu,
    dla__kind_indexing1d, dla__kind_crosschannel, dla__kind_crop2d,
    dla__kind_depth_to_space2d, dla__kind_space_to_depth, dla__kind_resize3d, dla__kind_crop3d,
    dla__kind_attention;

/* ------------------------------------------------------------ initializers */

/* A new tensor of dtype and dims drawn by initializer name ("glorot",
 * "he", "narrow-normal", "zeros", "ones", "orthogonal") with MATLAB's fan
 * sizes. NULL while loading (nothing is made or drawn: the sink takes the
 * saved value). Error tensor for an unknown name. */
dla_tensor *dla__init_tensor(const char *init, const dla__param_sink *sink, int ndims,
                             const int64_t *dims, double fan_in, double fan_out);
/* Nonzero when name is an initializer this layer accepts (extra: the
 * lstm's own names allowed). */
int dla__init_known(const char *name, int lstm);

/* ---------------------------------------------------------------- networks */

typedef struct dla__conn {
    int src, dst, port; /* layer indices, 0-based port */
    int sport;          /* the source's output port (0-based; 0 for most layers) */
    char *text[2];      /* "conv1" ("lstm/hidden"), "add/in2" */
} dla__conn;

typedef struct dla__net_input {
    int layer, port; /* port -1: an input layer */
} dla__net_input;

struct dla_net {
    uint32_t magic; /* DLA__HANDLE_NET; DEAD once freed (docs/checks.md) */
    int nlayers, cap;
    dla_layer **layers;
    int nconn, conn_cap;
    dla__conn *conn;
    int initialized;
    int *order;          /* topological */
    int **src;           /* per layer, per port: source layer */
    int **src_port;      /* per layer, per port: that source's output port */
    int ninputs;
    dla__net_input *inputs;
    char **input_names;
    dla__shape *input_shapes; /* one observation of each input */
    int noutputs;
    int *outputs;
    int *output_ports;   /* each output's port of its layer */
    char **output_names; /* "fc", "lstm/hidden" */
    /* The inputs and outputs of a network not yet initialized, as the
     * graph has them now (dla_net_input_name before dla_net_init, to know
     * which examples to give it): worked out when asked, forgotten with
     * initialization's (uninit). graph_valid 0: not worked out. */
    int graph_valid, graph_ninputs, graph_noutputs;
    char **graph_inputs;
    int *graph_outputs;
    char **graph_output_names;
    dla_table tables[DLA__PARAM_KIND_COUNT];
    dla_dtype dtype;
    char *signature; /* architecture JSON: the acceleration key */
    size_t signature_len;
    dla_accel *accel;
    int accelerate;
};

/* The architecture as JSON text (layers, options, connections; with
 * parameter dims and dtypes when with_params). Caller frees. NULL when out
 * of memory. */
char *dla__net_architecture(const dla_net *net, int with_params, size_t *len);
/* Forgets what initialization worked out (the parameters stay). */
void dla__net_uninit(dla_net *net);
/* dla_net_gradient_hooked, except that the learnable rows i with skip[i]
 * set (skip may be NULL: none) are not asked for: they get zeros, and the
 * backward of the layers that lead only to them does not run (trainnet's
 * frozen layers, as MATLAB's trainer computes no gradient for a layer
 * that does not learn). At least one row must be asked for. */
dla_status dla__net_gradient_rows(dla_net *net, dla_tensor *loss, dla_tensor **grads,
                                  const dla_gradient_hooks *hooks, const char *skip);
/* DLA_OK when net is a live network; otherwise the error (logged, and the
 * thread's last error) naming fn: freed already, or not a network. */
dla_status dla__net_check(const dla_net *net, const char *fn);
/* Nonzero when layer is a live layer handle (nothing logged). */
int dla__layer_live(const dla_layer *layer);
/* Frees a layer whether or not a network owns it (the network's own
 * teardown); dla_layer_free refuses an owned one. */
void dla__layer_destroy(dla_layer *layer);

/* Checks the n layers given to a call that takes them over (none NULL,
 * freed, another network's, given twice or in an error state), naming fn
 * and the first bad one. */
dla_status dla__net_check_given(int n, dla_layer *const *layers, const char *fn);
/* Frees the layers given to a call that failed (not those it must leave
 * alone: freed, another network's, a second mention). */
void dla__net_free_given(int n, dla_layer *const *layers);
/* dla_net_add_layers with fn in its messages: appends the layers, in
 * sequence among themselves; on failure frees them and leaves net as it was. */
dla_status dla__net_add_layers(dla_net *net, int n, dla_layer *const *layers, const char *fn);
/* Drops connection k (its texts freed, the later ones moved down); the
 * caller forgets the initialization. */
void dla__net_drop_connection(dla_net *net, int k);
/* Connects output sp of layer s to input dp of layer d (free, checked). */
dla_status dla__net_connect_ports(dla_net *net, int s, int sp, int d, int dp, const char *fn);
/* DLA_OK when every element of a zscore StandardDeviation is positive and
 * finite; else DLA_ERR_INVALID_ARGUMENT naming who and the first bad one
 * (1-based). Reads std to the host. */
dla_status dla__input_std_check(const char *who, dla_tensor *std);
/* The first value of the network's tables (learnables, then state, then
 * fixed parameters such as input statistics), or NULL: its dtype and
 * device are the network's, with or without learnables (net_params.c). */
dla_tensor *dla__net_first_value(const dla_net *net);
/* The network's dtype as its values have it: the dtype its Learnables
 * share (a network cast in place, dla_dlupdate(@double) over their
 * values, which net->dtype, set by initialization and dla_net_cast, does
 * not see), or without learnables the dtype all its values share;
 * net->dtype when they differ or there are none. */
dla_dtype dla__net_values_dtype(const dla_net *net);
/* Where a network's values live (dla__net_first_value's device; the
 * current device when it has none), and the dla_mbq cast its data takes
 * ("double" for a double network, else "single"). */
dla_device *dla__net_device(dla_net *net);
const char *dla__net_cast_name(dla_net *net);
/* Layer index by name; -1 when none. */
int dla__net_find(const dla_net *net, const char *name);
/* The layer an output name names: its name, or MATLAB's "name/out" (the
 * layer's first output), "name/hidden", "name/cell" (HasStateOutputs);
 * -1 when none. *port (may be NULL): the output port. */
int dla__net_find_output(const dla_net *net, const char *name, int *port);
/* The failure of an output name dla__net_find_output did not find, set
 * as the last error: a layer's own name with a port it lacks names the
 * outputs it has ("layer 'l' (LSTM) has outputs \"l/out\", \"l/hidden\"";
 * it was "no layer is named 'l/foo'"), any other "no layer is named". */
dla_status dla__net_output_unknown(const dla_net *net, const char *name, const char *fn);
/* The name of output port `port` of layer l as a connection's source and
 * an output's name: "layer" (one output), "layer/out", "layer/hidden",
 * "layer/cell"; allocated (dla__nn_free); NULL when out of memory. */
char *dla__net_output_port_name(const dla_layer *l, int port);
/* The shape of output port `port` of an initialized layer. */
const dla__shape *dla__layer_out_shape(const dla_layer *l, int port);
/* A batch normalization layer's State rows (TrainedMean, TrainedVariance)
 * and its input. */
typedef struct dla__bn_rows {
    int mean_row, var_row;
    /* The output it normalizes ("conv", "lstm/cell": an output name for
     * Outputs); NULL: the network's input. */
    const char *source;
} dla__bn_rows;
/* The batch normalization layers of an initialized network, at most max
 * into out; returns how many there are. */
int dla__net_batchnorm_rows(const dla_net *net, int max, dla__bn_rows *out);
/* Port `port` of layer l: "layer" (one input; port -1, an input layer's
 * own), "layer/inK" (port K-1 of several), "layer/in" and "layer/mask"
 * (a padding mask port), "layer/in" and "layer/ref" (crop2dLayer),
 * "layer/in", "layer/hidden", "layer/cell" (state inputs), allocated
 * (free with dla__nn_free); NULL when out of memory. */
char *dla__net_port_name(const dla_layer *l, int port);
/* The name of l's input port k when l has several named ones ("in" and
 * "mask" with HasPaddingMaskInput, "in" and "ref" of a crop layer and a
 * resize layer's EnableReferenceInput, "in", "hidden", "cell" with
 * HasStateInputs, the kind's in_names); NULL for one input, for a kind of
 * in1..inN and for k out of range. */
const char *dla__in_port(const dla_layer *l, int k);
/* The name of l's output port k: "out" (the only one, or the first),
 * "hidden", "cell" with HasStateOutputs; NULL for k out of range. A
 * layer of one output is named by its name alone
 * (dla__net_output_port_name), "layer/out" accepted as well. */
const char *dla__out_port(const dla_layer *l, int k);

/* ------------------------------------------------ recurrent state ports */

/* HasStateInputs and HasStateOutputs (nn/layer_state_ports.c). */
extern const char *const dla__state_in_names[DLA__MAX_OUTPUTS];  /* "in", "hidden", "cell" */
extern const char *const dla__state_out_names[DLA__MAX_OUTPUTS]; /* "out", "hidden", "cell" */
/* A layer's output ports for kind with props: 1 + the kind's states with
 * HasStateOutputs, otherwise 1. */
int dla__kind_outputs(const dla__layer_kind *kind, const dla__props *p);
/* Checks the flags (0 or 1), for kind check functions. */
dla_status dla__state_io_check(const char *type, const dla__props *p, const char *name);
/* At initialization: the state inputs' shapes in[1..] against a state of
 * rows channels: "CB", rows channels. */
dla_status dla__state_io_init(const dla_layer *l, const dla__shape *in, int64_t rows);
/* A recurrent layer's run with its ports: the state inputs (checked:
 * "CB", rows channels, 1 or the batch's observations) take the place of
 * its state parameters, forward (the kind's run on c->p[0..2], then the
 * states at c->p[3..]) computes, and its final states become the state
 * outputs ("CB" rows x N). Without either flag, forward(p, c) itself. */
dla_status dla__state_io_forward(const char *type, int64_t rows, const dla__props *p, dla__call *c,
                                 dla_status (*forward)(const dla__props *p, dla__call *c));

/* ------------------------------------------------------ padding masks */

/* HasPaddingMaskInput layers (nn/layer_mask.c). At initialization: the
 * mask's shape (in[1]) against the input's (in[0]): the same format, with
 * a "C" dim (any number of channels; the first is read); the other dims
 * are checked at each run. */
dla_status dla__mask_check_init(const dla_layer *l, const dla__shape *in);
/* At a run: which steps of c->x[0] are data, from c->x[1]'s first channel
 * (nonzero: data), as 1 x B x T "CBT" (1 x B "CB") 0/1 in x's dtype; an
 * error tensor (message naming the layer, the ports and both shapes) when
 * the mask does not fit the input. */
dla_tensor *dla__mask_steps(const dla__call *c);
/* The same for data x of the input named xname (attentionLayer's mask
 * describes its "key"). */
dla_tensor *dla__mask_steps_of(dla_tensor *x, dla_tensor *m, const char *xname);
/* At initialization: the mask's format against its data's (input xname). */
dla_status dla__mask_check_formats(const dla__shape *x, const dla__shape *m, const char *xname);
/* The steps m of "CBT" (or "CB") data, as dla__mask_steps gives them, as
 * the key mask of dla_attention: T x 1 x 1 x B, the same keys hidden from
 * every query. */
dla_tensor *dla__mask_keys(dla_tensor *m);
/* x with its padded steps (m 0) set to 0, selected rather than
 * multiplied, so that a NaN or Inf held there reaches nothing (0 * NaN). */
dla_tensor *dla__mask_zero_padding(dla_tensor *m, dla_tensor *x);
/* For the message of a function that feeds a network one input (trainnet,
 * testnet, minibatchpredict): when one of net's inputs is a padding mask
 * port left unconnected, a clause naming it and what to do; otherwise one
 * naming the inputs and outputs (an LSTM's state port nothing reads is an
 * output, "enc/cell", which the counts alone did not say). */
void dla__mask_unfed_hint(const dla_net *net, char *buf, size_t size);

/* Builds a network from its architecture JSON text (nn/net_arch.c). The
 * parameter sink of its initialization takes tensors from lookup. */
typedef dla_tensor *(*dla__param_lookup)(void *ctx, dla__param_kind kind, const char *layer,
                                         const char *param, int ndims, const int64_t *dims);
/* (A negative dims entry matches any size: dla__param_add_batched.) */
dla_status dla__net_from_architecture(const char *text, size_t len, dla__param_lookup lookup,
                                      void *ctx, const char *what, dla_net **out);
/* dla_net_init with a loader behind the sink. */
dla_status dla__net_init_with(dla_net *net, int nexamples, dla_tensor *const *examples,
                              dla__param_lookup lookup, void *ctx, dla_dtype dtype);

/* The accelerated function behind forward and predict (nn/net_run.c). */
dla_accel *dla__net_make_accel(dla_net *net);

extern const char *const dla__param_kind_names[DLA__PARAM_KIND_COUNT]; /* "learnables"... */

#endif
