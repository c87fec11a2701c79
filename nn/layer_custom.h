/*
 * layer_custom.h - what the files of custom layers share: a registered
 * type (nn/layer_custom.c) and the op that runs a layer with a backward
 * of its own (nn/layer_custom_op.c).
 */
#ifndef DLA_NN_LAYER_CUSTOM_H
#define DLA_NN_LAYER_CUSTOM_H

#include "nn/nn.h"

/* A layer with its own backward is one op (core/op.h): its inputs, then
 * its learnables and state, fit in the op's 8 inputs; its outputs are Z
 * and the new state. */
#define DLA__CUSTOM_OP_MAX_IN 8
#define DLA__CUSTOM_OP_MAX_STATE 3

struct dla__custom_type {
    dla_layer_type def; /* the definition, its strings in names */
    char *names;
    dla_layer_property props[DLA_LAYER_MAX_PROPERTIES];
    dla__field fields[DLA_LAYER_MAX_PROPERTIES + 1];
    dla__layer_kind kind; /* what the network's machinery uses */
    struct dla__custom_type *next;
};

/* The functions every registered kind shares (type, display, fields and
 * custom filled per registration). */
extern const dla__layer_kind dla__custom_kind_template;

/* Checks a custom layer's property values (finite; the type's validate). */
dla_status dla__custom_check(const dla__props *p, const char *name);
/* The same for values custom of a layer of type r named name. */
dla_status dla__custom_check_values(const dla__custom_type *r, const double *custom,
                                    const char *name);

/* The io the callbacks see for call c of layer l: learnables and state
 * split out of c->p into learn and state (DLA__MAX_PARAMS room each). */
void dla__custom_io(const dla_layer *l, const dla__call *c, dla_tensor **learn,
                    dla_tensor **state, dla_layer_io *io);

/* DLA_ERR_INVALID_ARGUMENT (and the message) when predict or forward,
 * which, set io->new_state[k] for a k past io->nstate. */
dla_status dla__custom_new_state_check(const dla_layer_io *io, const char *which);

/* Runs layer c->layer of type r as one op whose backward is the type's:
 * sets c->y and (training) c->new_state. */
dla_status dla__custom_op_run(const dla__custom_type *r, dla__call *c);

/* The name of a registered type by its registration, for trace files:
 * the registration of name; NULL when none. */
const dla__custom_type *dla__custom_type_find(const char *name);

#endif
