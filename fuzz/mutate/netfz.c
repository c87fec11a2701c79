/*
 * netfz seed DIR: networks of most layer kinds (some without input
 * layers) saved to DIR; netfz FILE...: each loaded and, when it loads,
 * predicted on random input of its input size.
 * Part of fuzz/mutate/run.sh; prints one line per file (OK, LOADED,
 * REFUSED with the message, NONAME when the message lacks the path).
 */
#include <dlaccel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void save(const char *dir, const char *name, int n, dla_layer **ls)
{
    dla_net *net = dla_net_create(n, ls);
    char p[512];
    snprintf(p, sizeof p, "%s/%s.safetensors", dir, name);
    dla_status st = dla_net_save(net, p);
    if (st) fprintf(stderr, "save %s: %s\n", name, dla_last_error());
    dla_net_free(net);
}

static int seed(const char *d)
{
    dla_layer *a[] = {dla_image_input_layer(6, 6, 2, NULL),
        dla_conv2d_layer(3, 3, 4, &(dla_conv_layer_options){.padding_mode = "same"}),
        dla_batchnorm_layer(NULL), dla_relu_layer(NULL),
        dla_maxpool2d_layer(2, 2, &(dla_pool_layer_options){.stride = {2, 2}}),
        dla_crosschannelnorm_layer(3, NULL),
        dla_grouped_conv2d_layer(2, 2, 1, 2, NULL),
        dla_avgpool2d_layer(2, 2, NULL),
        dla_fc_layer(3, NULL), dla_softmax_layer(NULL)};
    save(d, "cnn", 10, a);
    dla_layer *b[] = {dla_sequence_input_layer(3, NULL), dla_lstm_layer(4, NULL),
        dla_gru_layer(3, NULL), dla_bilstm_layer(2, NULL), dla_dropout_layer(0.2, NULL),
        dla_fc_layer(2, NULL)};
    save(d, "rnn", 6, b);
    dla_layer *e[] = {dla_image3d_input_layer(4, 4, 4, 2, NULL),
        dla_conv3d_layer(2, 2, 2, 3, NULL), dla_groupnorm_layer(1, NULL), dla_maxpool3d_layer(2, 2, 2, NULL),
        dla_transposed_conv3d_layer(2, 2, 2, 2, NULL), dla_global_maxpool3d_layer(NULL), dla_fc_layer(2, NULL)};
    save(d, "c3d", 7, e);
    dla_layer *g[] = {dla_feature_input_layer(5, NULL), dla_fc_layer(4, NULL), dla_leakyrelu_layer(0.1, NULL),
        dla_clipped_relu_layer(2, NULL), dla_gelu_layer(NULL, NULL), dla_swish_layer(NULL), dla_fc_layer(2, NULL), dla_sigmoid_layer(NULL)};
    save(d, "feat", 8, g);
    dla_layer *h[] = {dla_sequence_input_layer(1, NULL), dla_word_embedding_layer(4, 10, NULL),
        dla_position_embedding_layer(4, 20, NULL), dla_sinusoidal_position_encoding_layer(4, NULL),
        dla_indexing1d_layer("last", NULL), dla_fc_layer(2, NULL)};
    save(d, "emb", 6, h);
    {
        dla_layer *q[] = {dla_fc_layer(3, NULL), dla_relu_layer(NULL), dla_fc_layer(2, NULL)};
        dla_net *net = dla_net_create(3, q);
        dla_net_init(net, 0, NULL);
        dla_tensor *ex = dla_rand(DLA_F32, "CB", 2, (int64_t[]){5, 1});
        if (dla_net_init(net, 1, &ex)) fprintf(stderr, "init: %s\n", dla_last_error());
        char p[512];
        snprintf(p, sizeof p, "%s/noinput.safetensors", d);
        if (dla_net_save(net, p)) fprintf(stderr, "save: %s\n", dla_last_error());
        dla_tensor_release(ex);
        dla_net_free(net);
    }
    {
        dla_layer *q[] = {dla_conv2d_layer(3, 3, 2, NULL), dla_relu_layer(NULL), dla_global_avgpool2d_layer(NULL)};
        dla_net *net = dla_net_create(3, q);
        dla_tensor *ex = dla_rand(DLA_F32, "SSCB", 4, (int64_t[]){6, 6, 2, 1});
        if (dla_net_init(net, 1, &ex)) fprintf(stderr, "init: %s\n", dla_last_error());
        char p[512];
        snprintf(p, sizeof p, "%s/noinput2.safetensors", d);
        if (dla_net_save(net, p)) fprintf(stderr, "save: %s\n", dla_last_error());
        dla_tensor_release(ex);
        dla_net_free(net);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "seed"))
        return seed(argv[2]);
    for (int i = 1; i < argc; i++) {
        fprintf(stderr, "== %s\n", argv[i]);
        dla_net *net = NULL;
        dla_status st = dla_net_load(argv[i], &net);
        if (st != DLA_OK) {
            const char *m = dla_last_error();
            printf("REFUSED %s: %d %s\n", argv[i], (int)st, m);
            if (!m || !strstr(m, argv[i])) printf("NONAME %s\n", argv[i]);
            continue;
        }
        printf("LOADED %s\n", argv[i]);
        int nin = dla_net_input_count(net);
        dla_tensor *x[8] = {0};
        dla_scope_begin();
        for (int k = 0; k < nin && k < 8; k++) {
            int64_t dims[DLA_MAX_DIMS];
            char fmt[DLA_MAX_DIMS + 1];
            int nd = dla_net_input_activation(net, k, dims, fmt);
            if (nd < 0) { printf("  no activation for input %d\n", k); nd = 0; }
            int64_t numel = 1;
            for (int q = 0; q < nd; q++) numel *= dims[q];
            if (numel > (1 << 24)) { printf("  huge input %lld\n", (long long)numel); goto out; }
            x[k] = dla_rand(DLA_F32, fmt, nd, dims);
        }
        dla_tensor *y[8] = {0};
        int nout = dla_net_output_count(net);
        st = dla_net_predict(net, nin, x, nout > 8 ? 8 : nout, y, NULL);
        printf("  predict %d %s\n", (int)st, st ? dla_last_error() : "");
out:
        dla_scope_end();
        dla_net_free(net);
    }
    return 0;
}
