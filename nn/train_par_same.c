/*
 * train_par_same.c - trainnet's workers check that they were called alike.
 *
 * Every rank calls dla_trainnet itself, with what its own program passes;
 * MATLAB's workers get one client's options, so they cannot differ. Here
 * a rank-dependent option or data set made each rank train on its own
 * terms with DLA_OK: another InitialLearnRate gave every rank another
 * network; another MiniBatchSize or number of observations made shares
 * that were no mini-batch of anyone's; another MaxEpochs left one rank
 * in an epoch the others had ended, every rank failing with collectives
 * out of step, and the next collective hung until
 * DLACCEL_COLLECTIVE_FAIL_AFTER broke the world. So at set-up the ranks
 * gather what decides the iterations and the updates (the resolved
 * options, the loss, the numbers of observations, the network's learn-rate
 * and L2 factors) and compare it with
 * rank 0's: on a difference every rank fails with the same message
 * naming the rank and the option. So are the environment variables
 * that decide which collectives a step makes (DLACCEL_BUCKET_MIB,
 * DLACCEL_OVERLAP). What each rank may set for itself (Verbose, Plots,
 * checkpoints, OutputFcn, DispatchInBackground) is not compared.
 */
#include <dlaccel.h>

#include "nn/spmd_impl.h"
#include "nn/train_parallel.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* FNV-1a of s (NULL apart from ""), folded to 32 bits: exact in a double. */
static double str_key(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    if (!s)
        h ^= 0xffu;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (double)(uint32_t)(h ^ (h >> 32));
}

static uint64_t mix(uint64_t h, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* The schedule list's values (not its function pointers, which are
 * addresses of each process's own). */
static double schedule_key(const dla_learn_rate_schedule *ls)
{
    uint64_t h = 1469598103934665603ull;
    for (; ls; ls = ls->next) {
        const double d[] = {str_key(ls->method), ls->drop_factor, ls->drop_period,
                            ls->warmup_iterations, ls->warmup_start_factor, ls->final_factor,
                            ls->period, ls->power, ls->fn != NULL, str_key(ls->frequency_unit),
                            ls->initial_factor, ls->period_growth_factor, ls->max_factor,
                            ls->step_ratio};
        h = mix(h, d, sizeof d);
    }
    return (double)(uint32_t)(h ^ (h >> 32));
}

/* A digest of n factors (NULL: none). */
static double factors_key(int n, const double *f)
{
    uint64_t h = 1469598103934665603ull;
    if (f)
        h = mix(h, f, sizeof *f * (size_t)n);
    return (double)(uint32_t)(h ^ (h >> 32));
}

typedef struct field {
    const char *name;
    double v;
    int text; /* a key of a string or a list: named, not printed */
} field;

#define MAX_FIELDS 40

static int fields_of(const dla__train_par *p, const dla_training_options *o,
                     const dla_train_loss *loss, int64_t n_train, int64_t n_val, int nl,
                     const double *lr_factor, const double *l2_factor, field *f)
{
    int n = 0;
#define NUM(nm, val) f[n++] = (field){nm, (double)(val), 0}
#define STR(nm, val) f[n++] = (field){nm, str_key(val), 1}
    NUM("the number of training observations", n_train);
    NUM("the number of validation observations", n_val);
    STR("Solver", o->solver);
    STR("the loss", loss && loss->name ? loss->name : loss && (loss->fn || loss->accel) ? "(a function)" : "");
    NUM("MaxEpochs", o->max_epochs);
    NUM("MiniBatchSize", o->mini_batch_size);
    NUM("InitialLearnRate", o->initial_learn_rate);
    f[n++] = (field){"LearnRateSchedule", schedule_key(&o->learn_rate_schedule), 1};
    NUM("Momentum", o->momentum);
    NUM("GradientDecayFactor", o->gradient_decay_factor);
    NUM("SquaredGradientDecayFactor", o->squared_gradient_decay_factor);
    NUM("Epsilon", o->epsilon);
    NUM("L2Regularization", o->l2_regularization);
    /* The network's own factors: rank 0's learnables are broadcast, but
     * each rank trains with its own network's factors, so another one on
     * a rank (a layer frozen there) gave each rank another network. */
    NUM("the number of learnables", nl);
    f[n++] = (field){"learn-rate factor of a learnable (dla_net_set_learn_rate_factor)",
                     factors_key(nl, lr_factor), 1};
    f[n++] = (field){"L2 factor of a learnable (dla_net_set_l2_factor)",
                     factors_key(nl, l2_factor), 1};
    NUM("GradientThreshold", o->gradient_threshold);
    STR("GradientThresholdMethod", o->gradient_threshold_method);
    STR("Shuffle", o->shuffle);
    NUM("ShuffleSeed (high word)", (uint32_t)(o->shuffle_seed >> 32));
    NUM("ShuffleSeed", (uint32_t)o->shuffle_seed);
    STR("PartialMiniBatch", o->partial_mini_batch);
    STR("SequenceLength", o->sequence_length);
    NUM("SequencePaddingValue", o->sequence_padding_value);
    STR("SequencePaddingDirection", o->sequence_padding_direction);
    STR("ExecutionEnvironment", o->execution_environment);
    NUM("ResetInputNormalization", o->reset_input_normalization);
    STR("BatchNormalizationStatistics", o->batch_normalization_statistics);
    NUM("ValidationFrequency", o->validation_frequency);
    NUM("ValidationPatience", o->validation_patience);
    STR("OutputNetwork", o->output_network);
    STR("Metrics", o->metrics);
    /* Each rank's environment: the reductions' buckets and whether they
     * overlap the backward decide which collectives a step makes. */
    NUM("DLACCEL_BUCKET_MIB (bytes)", dla__spmd_bucket_bytes());
    NUM("overlapped reductions (DLACCEL_OVERLAP)", p->overlap);
#undef NUM
#undef STR
    return n;
}

static int same(double a, double b)
{
    return a == b || (isnan(a) && isnan(b));
}

dla_status dla__train_par_same(const dla__train_par *p, const dla_training_options *o,
                               const dla_train_loss *loss, int64_t n_train, int64_t n_val,
                               int nl, const double *lr_factor, const double *l2_factor)
{
    if (!p->on || p->size == 1)
        return DLA_OK;
    field f[MAX_FIELDS];
    const int n = fields_of(p, o, loss, n_train, n_val, nl, lr_factor, l2_factor, f);
    double mine[MAX_FIELDS];
    for (int i = 0; i < n; i++)
        mine[i] = f[i].v;
    dla_scope_begin();
    dla_tensor *x = dla_tensor_from_host(mine, DLA_F64, "", DLA_DIMS(n)), *all = NULL;
    dla_status st = dla_tensor_status(x);
    if (st == DLA_OK)
        st = dla_allgather(x, &all);
    double *v = st == DLA_OK ? dla_malloc(sizeof *v * (size_t)n * (size_t)p->size) : NULL;
    if (st == DLA_OK && !v)
        st = dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
    if (st == DLA_OK)
        st = dla_tensor_to_host(all, v, sizeof *v * (size_t)n * (size_t)p->size);
    dla_scope_end();
    if (st != DLA_OK) {
        char why[1024];
        snprintf(why, sizeof why, "%s", dla_last_error());
        dla_free(v);
        return dla_set_error(st, "dla_trainnet: rank %d: comparing the workers' options: %s",
                             p->rank, why);
    }
    /* In rank order against rank 0, so that every rank names the same. */
    for (int r = 1; r < p->size; r++)
        for (int i = 0; i < n; i++) {
            const double a = v[i], b = v[(size_t)r * (size_t)n + (size_t)i];
            if (same(a, b))
                continue;
            dla_free(v);
            if (f[i].text)
                return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                                     "dla_trainnet: ExecutionEnvironment \"%s\": rank %d has "
                                     "another %s than rank 0 (every rank calls trainnet with the "
                                     "same options, loss and data)",
                                     o->execution_environment, r, f[i].name);
            /* The shortest that tells them apart. */
            char sa[32], sb[32];
            for (int digits = 6; digits <= 17; digits++) {
                snprintf(sa, sizeof sa, "%.*g", digits, a);
                snprintf(sb, sizeof sb, "%.*g", digits, b);
                if (strcmp(sa, sb))
                    break;
            }
            return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                                 "dla_trainnet: ExecutionEnvironment \"%s\": rank %d has %s %s "
                                 "where rank 0 has %s (every rank calls trainnet with the same "
                                 "options, loss and data)",
                                 o->execution_environment, r, f[i].name, sb, sa);
        }
    dla_free(v);
    return DLA_OK;
}
