/*
 * token_net.h - the transformer encoder of examples/tokens, shared with
 * the benchmark (bench/workloads_netstep.c), which times its train step
 * beside bench/torch_tokens.py. Token sequences ("CBT", one token index a
 * step, 1-based, 0 the padding) of at most max_length steps:
 *
 *   input -> word embedding (dim) ----------------+
 *         -> position embedding (dim, max_length) -> add "pos"
 *         -> self-attention "attn" (heads, dim key channels) + "pos" -> layer norm "norm1"
 *         -> fc (2 dim) -> gelu -> fc (dim)       + "norm1" -> layer norm
 *         -> global max pooling "pool" over T -> fc (classes) -> softmax
 *   input -> "attn/mask", "pool/mask"
 *
 * The residual connections make it a graph: the layers are listed in
 * order and each addition's second input connected after. Padding: a
 * mini-batch is padded with token 0 to its longest sequence, and the
 * tokens themselves are the padding mask (HasPaddingMaskInput: nonzero a
 * data step, 0 a padded one), so the attention gives padded steps no
 * weight and the pooling leaves them out. Every other layer works step
 * by step, so a sequence's prediction does not depend on how much
 * padding its mini-batch holds (tests/test_net_mask.c checks it). Without
 * the masks, padded steps were keys of every query and their features
 * could win the max, so the prediction of a sequence changed with its
 * neighbours' lengths.
 */
#ifndef DLA_EXAMPLES_TOKEN_NET_H
#define DLA_EXAMPLES_TOKEN_NET_H

#include <dlaccel.h>
#include <dlaccel/net.h>

/* The network, initialized, for tokens 1..vocab (anything else is the
 * out-of-vocabulary vector), sequences of at most max_length steps and
 * `classes` outputs; NULL on an error (dla_last_error says which). */
static inline dla_net *token_net_make(int64_t vocab, int64_t max_length, int64_t dim,
                                      int64_t heads, int64_t classes)
{
    dla_layer *layers[] = {
        dla_sequence_input_layer(1, &(dla_sequence_input_options){.name = "tokens"}),
        dla_word_embedding_layer(dim, vocab, &(dla_word_embedding_layer_options){.name = "emb"}),
        dla_position_embedding_layer(dim, max_length, NULL),
        dla_addition_layer(2, &(dla_layer_options){.name = "pos"}),
        dla_self_attention_layer(heads, dim,
                                 &(dla_self_attention_layer_options){
                                     .name = "attn", .has_padding_mask_input = 1}),
        dla_addition_layer(2, &(dla_layer_options){.name = "res1"}),
        dla_layernorm_layer(&(dla_norm_layer_options){.name = "norm1"}),
        dla_fc_layer(2 * dim, NULL),
        dla_gelu_layer(NULL, NULL),
        dla_fc_layer(dim, NULL),
        dla_addition_layer(2, &(dla_layer_options){.name = "res2"}),
        dla_layernorm_layer(NULL),
        dla_global_maxpool1d_layer(
            &(dla_global_pool1d_layer_options){.name = "pool", .has_padding_mask_input = 1}),
        dla_fc_layer(classes, NULL),
        dla_softmax_layer(NULL),
    };
    dla_net *net = dla_net_create(sizeof layers / sizeof layers[0], layers);
    if (!net)
        return NULL;
    if (dla_net_connect(net, "tokens", "attn/mask") != DLA_OK ||
        dla_net_connect(net, "tokens", "pool/mask") != DLA_OK ||
        dla_net_connect(net, "emb", "pos/in2") != DLA_OK ||
        dla_net_connect(net, "pos", "res1/in2") != DLA_OK ||
        dla_net_connect(net, "norm1", "res2/in2") != DLA_OK || dla_net_init(net, 0, NULL) != DLA_OK) {
        dla_net_free(net);
        return NULL;
    }
    return net;
}

#endif
