/*
 * make_seeds.c - writes the seed corpora of the harnesses from what this
 * library saves, so the seeds follow the formats as they change:
 *
 *   make_seeds DIR   ->  DIR/net, DIR/net_arch, DIR/trace, DIR/idx
 *
 * (the manifest seeds are committed: fuzz/seeds/manifest). Each is a
 * file a reader accepts; the fuzzers mutate from there.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlaccel.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *dir;

static void fail(const char *what)
{
    fprintf(stderr, "make_seeds: %s: %s\n", what, dla_last_error());
    exit(1);
}

static const char *path(const char *sub, const char *name)
{
    static char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, sub);
    if (mkdir(p, 0755) != 0 && errno != EEXIST)
        fail(p);
    snprintf(p, sizeof p, "%s/%s/%s", dir, sub, name);
    return p;
}

static unsigned char *slurp(const char *p, size_t *n)
{
    FILE *f = fopen(p, "rb");
    if (!f)
        fail(p);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)size + 1);
    if (!b || fread(b, 1, (size_t)size, f) != (size_t)size)
        fail(p);
    fclose(f);
    *n = (size_t)size;
    return b;
}

static void spit(const char *p, const void *prefix, size_t np, const void *b, size_t n)
{
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(prefix, 1, np, f) != np || fwrite(b, 1, n, f) != n || fclose(f) != 0)
        fail(p);
}

/* A saved network, and its architecture text for fuzz_net_arch. */
static void net_seed(const char *name, dla_net *net)
{
    if (!net || dla_net_init(net, 0, NULL) != DLA_OK)
        fail(name);
    char file[64];
    snprintf(file, sizeof file, "%s.tmp", name);
    const char *p = path("net", file);
    if (dla_net_save(net, p) != DLA_OK)
        fail(p);
    dla_net_free(net);
    size_t n;
    unsigned char *b = slurp(p, &n);
    remove(p);
    /* fuzz_net's first byte: odd, it mends the checksum; even, not. */
    snprintf(file, sizeof file, "%s-whole.safetensors", name);
    spit(path("net", file), "\x01", 1, b, n);
    snprintf(file, sizeof file, "%s-raw.safetensors", name);
    spit(path("net", file), "\x00", 1, b, n);
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++)
        hlen |= (uint64_t)b[i] << (8 * i);
    json_t *root = json_loadb((const char *)b + 8, (size_t)hlen, 0, NULL);
    const char *arch = json_string_value(json_object_get(json_object_get(root, "__metadata__"),
                                                         "architecture"));
    if (!arch)
        fail("architecture");
    snprintf(file, sizeof file, "%s.json", name);
    spit(path("net_arch", file), "", 0, arch, strlen(arch));
    json_decref(root);
    free(b);
}

static void net_seeds(void)
{
    dla_layer *a[] = {
        dla_image_input_layer(6, 6, 2, &(dla_image_input_options){.name = "in"}),
        dla_conv2d_layer(3, 3, 2, &(dla_conv_layer_options){.padding_mode = "same", .name = "c"}),
        dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = "bn"}),
        dla_relu_layer(NULL),
        dla_maxpool2d_layer(2, 2, &(dla_pool_layer_options){.stride = {2, 2}}),
        dla_fc_layer(3, &(dla_fc_layer_options){.name = "fc"}),
        dla_softmax_layer(NULL),
    };
    net_seed("cnn", dla_net_create(7, a));
    dla_layer *s[] = {dla_sequence_input_layer(3, NULL), dla_lstm_layer(4, NULL),
                      dla_dropout_layer(0.2, NULL), dla_fc_layer(2, NULL)};
    net_seed("lstm", dla_net_create(4, s));
    dla_layer *d[] = {
        dla_image_input_layer(4, 4, 2, &(dla_image_input_options){.normalization = "none"}),
        dla_transposed_conv2d_layer(3, 3, 2, &(dla_transposed_conv_layer_options){
            .stride = {2, 2}, .cropping_mode = "same"}),
        dla_layernorm_layer(NULL), dla_gelu_layer(NULL, NULL)};
    net_seed("decoder", dla_net_create(4, d));
    dla_layer *q[] = {dla_sequence_input_layer(3, NULL),
                      dla_self_attention_layer(2, 4, &(dla_self_attention_layer_options){
                          .attention_mask = "causal"}),
                      dla_transposed_conv1d_layer(2, 3, NULL), dla_fc_layer(2, NULL)};
    net_seed("attention", dla_net_create(4, q));
    /* State ports: an encoder's final states start a GRU decoder
     * (connections from and to "enc/hidden"). */
    dla_layer *e[] = {dla_sequence_input_layer(3, NULL),
                      dla_lstm_layer(4, &(dla_lstm_layer_options){.name = "enc",
                                                                  .has_state_outputs = 1}),
                      dla_gru_layer(4, &(dla_gru_layer_options){.name = "dec",
                                                                .has_state_inputs = 1,
                                                                .has_state_outputs = 1})};
    dla_net *ed = dla_net_create(3, e);
    if (!ed || dla_net_connect(ed, "enc/hidden", "dec/hidden") != DLA_OK)
        fail("the state-port network");
    net_seed("state_ports", ed);
}

/* loss = sum((W2 tanh(W1 x + b1) - t).^2) and its gradients. */
static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *h = dla_tanh(dla_add(dla_mtimes(in[0], in[3]), in[1]));
    dla_tensor *y = dla_dropout(dla_mtimes(in[2], h), 0.25);
    dla_tensor *loss = dla_sum(dla_square(dla_sub(y, in[4])), 0, NULL);
    out[0] = loss;
    return dla_gradient(loss, 3, in, out + 1);
}

static void trace_seed(void)
{
    dla_scope_begin();
    dla_tensor *in[5] = {
        dla_randn(DLA_F32, "", DLA_DIMS(8, 4)), dla_randn(DLA_F32, "", DLA_DIMS(8, 1)),
        dla_randn(DLA_F32, "", DLA_DIMS(2, 8)), dla_randn(DLA_F32, "", DLA_DIMS(4, 6)),
        dla_randn(DLA_F32, "", DLA_DIMS(2, 6)),
    };
    dla_accel *af = dla_accelerate(model_loss, NULL);
    dla_tensor *out[4];
    if (!af || dla_accel_feval(af, NULL, 5, in, 4, out) != DLA_OK)
        fail("trace");
    dla_trace *t = dla_accel_trace(af, 0);
    const char *p = path("trace", "model.tmp");
    if (!t || dla_trace_save(t, p) != DLA_OK)
        fail(p);
    dla_trace_release(t);
    dla_accel_free(af);
    dla_scope_end();
    size_t n;
    unsigned char *b = slurp(p, &n);
    remove(p);
    /* fuzz_trace's first byte: odd, it mends the envelope; even, not. */
    spit(path("trace", "model-whole.dlt"), "\x01", 1, b, n);
    spit(path("trace", "model-raw.dlt"), "\x00", 1, b, n);
    free(b);
}

static void idx_seeds(void)
{
    unsigned char u8[2 * 3 * 4];
    for (size_t i = 0; i < sizeof u8; i++)
        u8[i] = (unsigned char)(i * 37);
    dla_idx a = {.type = DLA_IDX_U8, .ndims = 3, .dims = {2, 3, 4}, .numel = 24, .data = u8};
    if (dla_idx_write(path("idx", "images.idx"), &a, 0) != DLA_OK)
        fail("idx");
    double f64[5] = {1, -2, 0.5, 1e300, -0.0};
    dla_idx b = {.type = DLA_IDX_F64, .ndims = 1, .dims = {5}, .numel = 5, .data = f64};
    if (dla_idx_write(path("idx", "values.idx.gz"), &b, 6) != DLA_OK)
        fail("idx");
    int32_t i32[4] = {1, -1, 7, 1 << 30};
    dla_idx c = {.type = DLA_IDX_I32, .ndims = 2, .dims = {2, 2}, .numel = 4, .data = i32};
    if (dla_idx_write(path("idx", "ints.idx"), &c, 0) != DLA_OK)
        fail("idx");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_seeds DIR\n");
        return 2;
    }
    dir = argv[1];
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        fail(dir);
    dla_rng_seed(1);
    net_seeds();
    trace_seed();
    idx_seeds();
    return 0;
}
