/*
 * train_options.c - trainingOptions: what a zeroed field stands for, the
 * checks every value goes through before trainnet starts, MATLAB's display
 * of the options, and ExecutionEnvironment's mapping to a device.
 *
 * Checking everything up front means a misspelt option fails in
 * milliseconds, not after an epoch of training.
 */
#include <dlaccel.h>

#include "core/registry.h"
#include "nn/nn.h"
#include "nn/train_impl.h"
#include "nn/train_parallel.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const solvers[] = {"sgdm", "adam", "rmsprop", "lbfgs", NULL};
static const char *const line_searches[] = {"weak-wolfe", "strong-wolfe", "backtracking", NULL};
static const char *const shuffles[] = {"once", "every-epoch", "never", NULL};
static const char *const partials[] = {"discard", "return", NULL};
static const char *const directions[] = {"right", "left", NULL};
static const char *const environments[] = {"auto", "cpu", "gpu", "parallel", "multi-gpu", NULL};
static const char *const plots[] = {"none", "training-progress", NULL};
static const char *const clip_methods[] = {"l2norm", "global-l2norm", "absolute-value", NULL};
static const char *const units[] = {"epoch", "iteration", NULL};
static const char *const bn_statistics[] = {"population", "moving", NULL};
static const char *const output_networks[] = {"last-iteration", "best-validation", NULL};

/* The entry of list equal to s (the list's own string), NULL when none. */
static const char *pick(const char *const *list, const char *s)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], s))
            return list[i];
    return NULL;
}

/* fn names the public function the value was given to. */
static dla_status bad_string_in(const char *fn, const char *option, const char *value,
                                const char *const *list)
{
    char allowed[256] = "";
    for (int i = 0; list[i]; i++) {
        size_t n = strlen(allowed);
        snprintf(allowed + n, sizeof allowed - n, "%s\"%s\"", i ? ", " : "", list[i]);
    }
    return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "%s: %s \"%s\" is not one of %s", fn, option,
                         value, allowed);
}

static dla_status bad_string(const char *option, const char *value, const char *const *list)
{
    return bad_string_in("dla_training_options", option, value, list);
}

/* s (NULL: the list's first, the default) checked against list. */
static dla_status choose(const char *option, const char *s, const char *const *list,
                         const char **out)
{
    *out = s ? pick(list, s) : list[0];
    return *out ? DLA_OK : bad_string(option, s, list);
}

static dla_status bad_number(const char *option, double v, const char *rule)
{
    return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_training_options: %s %g: %s", option, v,
                         rule);
}

int dla__train_parse_metrics(const char *metrics)
{
    int bits = 0;
    const char *s = metrics ? metrics : "";
    while (*s) {
        while (*s == ' ' || *s == ',')
            s++;
        size_t n = strcspn(s, ", ");
        if (!n)
            break;
        if (n == 8 && !strncmp(s, "accuracy", 8))
            bits |= DLA__METRIC_ACCURACY;
        else if (n == 4 && !strncmp(s, "rmse", 4))
            bits |= DLA__METRIC_RMSE;
        else
            return -1;
        s += n;
    }
    return bits;
}

int64_t dla__train_parse_sequence_length(const char *s)
{
    if (!s || !strcmp(s, "longest"))
        return 0;
    if (!strcmp(s, "shortest"))
        return -1;
    char *end;
    /* A number past LLONG_MAX ("99999999999999999999") was read as
     * LLONG_MAX, a length that overflowed the padding of every batch. */
    errno = 0;
    long long v = strtoll(s, &end, 10);
    return end != s && !*end && v > 0 && errno != ERANGE && s[0] >= '0' && s[0] <= '9'
               ? (int64_t)v
               : -2;
}

/* An option of the other kind of solver, set. */
static dla_status not_for(const char *solver, const char *option)
{
    if (!strcmp(solver, "lbfgs"))
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "dla_training_options: %s does not apply to solver \"lbfgs\", a "
                             "full-batch solver (MATLAB's TrainingOptionsLBFGS has no %s); leave "
                             "it zero", option, option);
    return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                         "dla_training_options: %s applies to solver \"lbfgs\" only, not to "
                         "\"%s\"; leave it zero", option, solver);
}

/* An option and whether the caller set it. */
typedef struct set_option {
    const char *name;
    int set;
} set_option;

/* The first of n options that is set, refused for solver. */
static dla_status refuse_set(const char *solver, const set_option *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i].set)
            return not_for(solver, list[i].name);
    return DLA_OK;
}

/* Solver "lbfgs": the mini-batch options must be unset; its own get their
 * defaults. */
static dla_status resolve_lbfgs(dla_training_options *o)
{
    const dla_learn_rate_schedule *s = &o->learn_rate_schedule;
    const set_option minibatch[] = {
        {"MaxEpochs", o->max_epochs != 0},
        {"MiniBatchSize", o->mini_batch_size != 0},
        {"InitialLearnRate", o->initial_learn_rate != 0},
        {"LearnRateSchedule", (s->method && strcmp(s->method, "none")) || s->drop_factor != 0 ||
                                  s->drop_period || s->warmup_iterations ||
                                  s->warmup_start_factor != 0 || s->final_factor != 0 ||
                                  s->period || s->power != 0 || s->fn || s->frequency_unit ||
                                  s->initial_factor != 0 || s->period_growth_factor != 0 ||
                                  s->max_factor != 0 || s->step_ratio != 0 || s->next},
        {"Momentum", o->momentum != 0},
        {"GradientDecayFactor", o->gradient_decay_factor != 0},
        {"SquaredGradientDecayFactor", o->squared_gradient_decay_factor != 0},
        {"Epsilon", o->epsilon != 0},
        {"L2Regularization", o->l2_regularization != 0},
        {"GradientThreshold", o->gradient_threshold != 0},
        {"GradientThresholdMethod", o->gradient_threshold_method != NULL},
        {"Shuffle", o->shuffle != NULL},
        {"PartialMiniBatch", o->partial_mini_batch != NULL},
    };
    dla_status st = refuse_set("lbfgs", minibatch, sizeof minibatch / sizeof minibatch[0]);
    if (st != DLA_OK)
        return st;
    st = choose("LineSearchMethod", o->line_search_method, line_searches,
                           &o->line_search_method);
    if (st != DLA_OK)
        return st;
    if (o->max_iterations < 0 || o->history_size < 0 || o->max_num_line_search_iterations < 0)
        return bad_number(o->max_iterations < 0 ? "MaxIterations"
                          : o->history_size < 0 ? "HistorySize"
                                                : "MaxNumLineSearchIterations",
                          o->max_iterations < 0 ? o->max_iterations
                          : o->history_size < 0 ? o->history_size
                                                : o->max_num_line_search_iterations,
                          "it must be a positive integer");
    if (isnan(o->gradient_tolerance) || isnan(o->step_tolerance))
        return bad_number(isnan(o->gradient_tolerance) ? "GradientTolerance" : "StepTolerance",
                          NAN, "it must be a number (negative: 0)");
    if (!(o->initial_inverse_hessian_factor >= 0) || isinf(o->initial_inverse_hessian_factor))
        return bad_number("InitialInverseHessianFactor", o->initial_inverse_hessian_factor,
                          "it must be a positive finite number");
    if (!(o->initial_step_size >= 0))
        return bad_number("InitialStepSize", o->initial_step_size,
                          "it must be 0 (\"auto\"), a positive number or Inf");
    o->max_iterations = o->max_iterations ? o->max_iterations : 1000;
    o->gradient_tolerance = o->gradient_tolerance == 0 ? 1e-5 : fmax(o->gradient_tolerance, 0);
    o->step_tolerance = o->step_tolerance == 0 ? 1e-5 : fmax(o->step_tolerance, 0);
    o->history_size = o->history_size ? o->history_size : DLA_LBFGS_HISTORY_SIZE;
    if (o->initial_inverse_hessian_factor == 0)
        o->initial_inverse_hessian_factor = DLA_LBFGS_INITIAL_INVERSE_HESSIAN_FACTOR;
    if (!o->max_num_line_search_iterations)
        o->max_num_line_search_iterations = DLA_LBFGS_MAX_NUM_LINE_SEARCH_ITERATIONS;
    return DLA_OK;
}

/* The mini-batch solvers: the lbfgs options must be unset. */
static dla_status resolve_minibatch(dla_training_options *o)
{
    const set_option lbfgs[] = {
        {"MaxIterations", o->max_iterations != 0},
        {"GradientTolerance", o->gradient_tolerance != 0},
        {"StepTolerance", o->step_tolerance != 0},
        {"LineSearchMethod", o->line_search_method != NULL},
        {"HistorySize", o->history_size != 0},
        {"InitialInverseHessianFactor", o->initial_inverse_hessian_factor != 0},
        {"InitialStepSize", o->initial_step_size != 0},
        {"MaxNumLineSearchIterations", o->max_num_line_search_iterations != 0},
    };
    dla_status st = refuse_set(o->solver, lbfgs, sizeof lbfgs / sizeof lbfgs[0]);
    if (st != DLA_OK)
        return st;
    int sgdm = !strcmp(o->solver, "sgdm"), adam = !strcmp(o->solver, "adam");
    /* Each mini-batch solver's own options (MATLAB's TrainingOptionsSGDM
     * has Momentum; ADAM GradientDecayFactor, SquaredGradientDecayFactor
     * and Epsilon; RMSProp the last two). Set for another solver they
     * went unused without a word: Momentum 0.5 with "adam" trained as if
     * it were not set. */
    const set_option own[] = {
        {"Momentum", !sgdm && o->momentum != 0},
        {"GradientDecayFactor", !adam && o->gradient_decay_factor != 0},
        {"SquaredGradientDecayFactor", sgdm && o->squared_gradient_decay_factor != 0},
        {"Epsilon", sgdm && o->epsilon != 0},
    };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (own[i].set)
            return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                                 "dla_training_options: %s does not apply to solver \"%s\" "
                                 "(MATLAB's TrainingOptions%s has no %s); leave it zero",
                                 own[i].name, o->solver, sgdm ? "SGDM" : adam ? "ADAM" : "RMSProp",
                                 own[i].name);
    if (o->max_epochs < 0)
        return bad_number("MaxEpochs", o->max_epochs, "it must be a positive integer");
    if (o->mini_batch_size < 0)
        return bad_number("MiniBatchSize", (double)o->mini_batch_size, "it must be a positive integer");
    o->max_epochs = o->max_epochs ? o->max_epochs : 30;
    o->mini_batch_size = o->mini_batch_size ? o->mini_batch_size : 128;
    if (!(o->initial_learn_rate >= 0) || isinf(o->initial_learn_rate))
        return bad_number("InitialLearnRate", o->initial_learn_rate, "it must be a positive number");
    if (o->initial_learn_rate == 0)
        o->initial_learn_rate = sgdm ? DLA_SGDM_LEARN_RATE : DLA_ADAM_LEARN_RATE;

    dla_learn_rate_schedule *s = &o->learn_rate_schedule;
    static const char *const schedules[] = {"none", "piecewise", "exponential", "cosine",
                                            "polynomial", "cyclical", "warmup", "custom", NULL};
    int known = !s->method;
    for (int i = 0; schedules[i] && !known; i++)
        known = !strcmp(s->method, schedules[i]);
    if (!known)
        return bad_string("LearnRateSchedule", s->method, schedules);
    if (s->fn && s->method && strcmp(s->method, "none") && strcmp(s->method, "custom"))
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_training_options: LearnRateSchedule "
                             "\"%s\" and a schedule function: give one", s->method);
    if (s->method && !strcmp(s->method, "custom") && !s->fn)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_training_options: LearnRateSchedule "
                             "\"custom\" needs its function (learn_rate_schedule.fn)");
    s->method = s->method ? s->method : s->fn ? "custom" : "none";
    if (s->period < 0)
        return bad_number("learn-rate period", s->period, "it must not be negative (0: MaxEpochs)");
    /* MATLAB's FinalFactor is any positive scalar (a schedule may end
     * above where it starts). */
    if (!(s->final_factor >= 0) || isinf(s->final_factor))
        return bad_number("learn-rate final factor", s->final_factor,
                          "it must be a finite number >= 0");
    if (!(s->power >= 0) || isinf(s->power))
        return bad_number("learn-rate power", s->power, "it must be a finite number >= 0 (0: 1)");
    /* A negative drop factor asks for 0 itself (MATLAB allows 0), as a
     * negative momentum does; it stays negative here, since 0 in a
     * schedule means the default 0.1 to dla_learn_rate_at too. */
    if (isnan(s->drop_factor) || s->drop_factor > 1)
        return bad_number("LearnRateDropFactor", s->drop_factor,
                          "it must be in [0, 1] (negative: 0)");
    if (s->drop_period < 0 || s->warmup_iterations < 0)
        return bad_number(s->drop_period < 0 ? "LearnRateDropPeriod" : "warm-up iterations",
                          s->drop_period < 0 ? s->drop_period : s->warmup_iterations,
                          "it must not be negative");
    /* A negative start factor gave a negative rate, refused only by the
     * solver at iteration 1. */
    if (!(s->warmup_start_factor >= 0) || isinf(s->warmup_start_factor))
        return bad_number("warm-up start factor", s->warmup_start_factor,
                          "it must be a finite number >= 0");
    /* The rest (FrequencyUnit, the factors of "cosine" and "cyclical", a
     * list of schedules) as dla_learn_rate_at reads them. */
    if (dla__learn_rate_check(s, o->max_epochs) != DLA_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_training_options: %s", msg);
    }
    s->drop_factor = s->drop_factor == 0 ? 0.1 : s->drop_factor < 0 ? -1 : s->drop_factor;
    /* piecewiseLearnRate's Period may come as `period` (checked above to
     * agree with drop_period when both are set); both hold it resolved,
     * so the resolved schedule reads as the one given. */
    const int drops = !strcmp(s->method, "piecewise") || !strcmp(s->method, "exponential");
    s->drop_period = s->drop_period ? s->drop_period : drops && s->period ? s->period : 10;
    if (drops)
        s->period = s->drop_period;
    const int cyclical = !strcmp(s->method, "cyclical"), warmup = !strcmp(s->method, "warmup");
    const int by_iter = s->frequency_unit ? !strcmp(s->frequency_unit, "iteration") : warmup;
    s->frequency_unit = by_iter ? "iteration" : "epoch";
    /* MATLAB's defaults: "cyclical" a period of 10 steps, "warmup" 5;
     * "cosine" and "polynomial" over the whole training unless told: the
     * MaxEpochs resolved above (counted in iterations, the trainer's
     * iterations per epoch are needed: left 0 for it). */
    if (!s->period)
        s->period = cyclical ? 10 : warmup ? 5 : by_iter ? 0 : o->max_epochs;
    s->power = s->power ? s->power : 1;
    if (!strcmp(s->method, "cosine") || !strcmp(s->method, "polynomial")) {
        s->initial_factor = s->initial_factor ? s->initial_factor : 1;
        s->period_growth_factor = s->period_growth_factor ? s->period_growth_factor : 1;
    }
    if (warmup)
        s->final_factor = s->final_factor ? s->final_factor : 1;
    if (cyclical) {
        s->max_factor = s->max_factor ? s->max_factor : 5;
        s->step_ratio = s->step_ratio ? s->step_ratio : 0.5;
    }

    /* Zero means the default; a negative value asks for zero itself. */
    struct {
        const char *name;
        double *v, def;
        int closed; /* 1: [0, 1]; 0: [0, 1) */
    } decays[] = {
        {"Momentum", &o->momentum, DLA_SGDM_MOMENTUM, 1},
        {"GradientDecayFactor", &o->gradient_decay_factor, DLA_ADAM_GRAD_DECAY, 0},
        {"SquaredGradientDecayFactor", &o->squared_gradient_decay_factor,
         adam ? DLA_ADAM_SQ_GRAD_DECAY : DLA_RMSPROP_SQ_GRAD_DECAY, 0},
    };
    for (size_t i = 0; i < sizeof decays / sizeof decays[0]; i++) {
        double v = *decays[i].v;
        if (isnan(v) || v > 1 || (v == 1 && !decays[i].closed))
            return bad_number(decays[i].name, v, decays[i].closed ? "it must be in [0, 1]"
                                                                  : "it must be in [0, 1)");
        *decays[i].v = v == 0 ? decays[i].def : v < 0 ? 0 : v;
    }
    /* An infinite Epsilon divided every step of "adam" and "rmsprop" to
     * 0: every epoch ran, no weight moved, and trainnet said DLA_OK. */
    if (!(o->epsilon >= 0) || isinf(o->epsilon))
        return bad_number("Epsilon", o->epsilon, "it must be a positive finite number");
    o->epsilon = o->epsilon ? o->epsilon : DLA_ADAM_EPSILON;
    /* What does not apply to the solver stays zero (train.h). */
    if (!sgdm)
        o->momentum = 0;
    if (!adam)
        o->gradient_decay_factor = 0;
    if (sgdm)
        o->squared_gradient_decay_factor = o->epsilon = 0;
    /* An infinite factor made the first update's weights NaN; the next
     * iteration then stopped at a NaN loss, blaming the data or the
     * learning rate. -Inf is a negative number: none. */
    if (isnan(o->l2_regularization) || o->l2_regularization == INFINITY)
        return bad_number("L2Regularization", o->l2_regularization,
                          "it must be a finite number (negative: none)");
    o->l2_regularization = o->l2_regularization == 0 ? 1e-4 : o->l2_regularization < 0 ? 0
                                                                                   : o->l2_regularization;
    if (!(o->gradient_threshold >= 0))
        return bad_number("GradientThreshold", o->gradient_threshold, "it must be a positive number");
    o->gradient_threshold = o->gradient_threshold ? o->gradient_threshold : INFINITY;
    if ((st = choose("GradientThresholdMethod", o->gradient_threshold_method, clip_methods,
                     &o->gradient_threshold_method)) != DLA_OK ||
        (st = choose("Shuffle", o->shuffle, shuffles, &o->shuffle)) != DLA_OK)
        return st;
    return choose("PartialMiniBatch", o->partial_mini_batch, partials, &o->partial_mini_batch);
}

DLA_API dla_status dla_training_options_resolve(const dla_training_options *opts,
                                                dla_training_options *out)
{
    if (!out)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_training_options_resolve: out is NULL");
    dla_training_options o = opts ? *opts : (dla_training_options){0};
    dla_status st;
    if ((st = choose("Solver", o.solver, solvers, &o.solver)) != DLA_OK)
        return st;
    if ((st = !strcmp(o.solver, "lbfgs") ? resolve_lbfgs(&o) : resolve_minibatch(&o)) != DLA_OK)
        return st;
    if ((st = choose("SequencePaddingDirection", o.sequence_padding_direction, directions,
                     &o.sequence_padding_direction)) != DLA_OK ||
        (st = choose("ExecutionEnvironment", o.execution_environment, environments,
                     &o.execution_environment)) != DLA_OK ||
        (st = choose("Plots", o.plots, plots, &o.plots)) != DLA_OK ||
        (st = choose("CheckpointFrequencyUnit", o.checkpoint_frequency_unit, units,
                     &o.checkpoint_frequency_unit)) != DLA_OK ||
        (st = choose("BatchNormalizationStatistics",
                     /* MATLAB's display shows "auto" for the default: read
                      * as "population", its earlier releases' default. */
                     o.batch_normalization_statistics &&
                             !strcmp(o.batch_normalization_statistics, "auto")
                         ? NULL
                         : o.batch_normalization_statistics,
                     bn_statistics, &o.batch_normalization_statistics)) != DLA_OK ||
        (st = choose("OutputNetwork", o.output_network, output_networks, &o.output_network)) !=
            DLA_OK)
        return st;
    if (!strcmp(o.output_network, "best-validation") && !o.validation_data)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_training_options: OutputNetwork "
                             "\"best-validation\" needs ValidationData (none given)");
    if (dla__train_parse_sequence_length(o.sequence_length) == -2)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "dla_training_options: SequenceLength \"%s\" is not \"longest\", "
                             "\"shortest\" or a positive whole number (at most 9223372036854775807)",
                             o.sequence_length);
    o.sequence_length = o.sequence_length ? o.sequence_length : "longest";
    if (isnan(o.sequence_padding_value))
        return bad_number("SequencePaddingValue", o.sequence_padding_value, "it must be a number");
    o.reset_input_normalization = o.reset_input_normalization >= 0;

    if (o.validation_frequency < 0 || o.validation_patience < 0 || o.verbose_frequency < 0 ||
        o.checkpoint_frequency < 0) {
        const char *n = o.validation_frequency < 0 ? "ValidationFrequency"
                        : o.validation_patience < 0 ? "ValidationPatience"
                        : o.verbose_frequency < 0   ? "VerboseFrequency"
                                                    : "CheckpointFrequency";
        double v = o.validation_frequency < 0 ? o.validation_frequency
                   : o.validation_patience < 0 ? o.validation_patience
                   : o.verbose_frequency < 0   ? o.verbose_frequency
                                               : o.checkpoint_frequency;
        return bad_number(n, v, "it must be a positive integer");
    }
    o.validation_frequency = o.validation_frequency ? o.validation_frequency : 50;
    o.verbose_frequency = o.verbose_frequency ? o.verbose_frequency : 50;
    o.checkpoint_frequency = o.checkpoint_frequency ? o.checkpoint_frequency : 1;
    o.verbose = o.verbose >= 0;
    if (dla__train_parse_metrics(o.metrics) < 0)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "dla_training_options: Metrics \"%s\": use \"accuracy\", \"rmse\" or "
                             "both, comma-separated", o.metrics);
    o.plots_path = o.plots_path ? o.plots_path : "training-progress.svg";
    o.output = o.output ? o.output : stdout;
    if (o.checkpoint_path && !*o.checkpoint_path)
        o.checkpoint_path = NULL;
    *out = o;
    return DLA_OK;
}

/* A number as MATLAB's short format shows it: whole numbers as they are,
 * others with 4 decimals, very small or large ones in e-notation. */
static void short_fmt(char *buf, size_t size, double v)
{
    if (isinf(v))
        snprintf(buf, size, "%sInf", v < 0 ? "-" : "");
    else if (v == floor(v) && fabs(v) < 1e15)
        snprintf(buf, size, "%.0f", v);
    else if (fabs(v) >= 1e-3 && fabs(v) < 1e3)
        snprintf(buf, size, "%.4f", v);
    else
        snprintf(buf, size, "%.4e", v);
}

typedef struct writer {
    char *buf;
    size_t size, len;
} writer;

static void put(writer *w, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void put(writer *w, const char *name, const char *fmt, ...)
{
    char value[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
    int n = snprintf(w->len < w->size ? w->buf + w->len : NULL, w->len < w->size ? w->size - w->len : 0,
                     "%32s: %s\n", name, value);
    if (n > 0)
        w->len += (size_t)n;
}

static void put_num(writer *w, const char *name, double v)
{
    char b[64];
    short_fmt(b, sizeof b, v);
    put(w, name, "%s", b);
}

DLA_API int dla_training_options_describe(const dla_training_options *opts, char *buf, size_t size)
{
    dla_training_options o;
    writer w = {buf, buf ? size : 0, 0};
    if (w.size)
        buf[0] = '\0';
    if (dla_training_options_resolve(opts, &o) != DLA_OK)
        return snprintf(buf, w.size, "invalid options: %s\n", dla_last_error());
    const int lbfgs = !strcmp(o.solver, "lbfgs");
    const char *cls = !strcmp(o.solver, "sgdm") ? "SGDM" : !strcmp(o.solver, "adam") ? "ADAM"
                      : lbfgs                   ? "LBFGS"
                                                : "RMSProp";
    int n = snprintf(buf, w.size, "  TrainingOptions%s with properties:\n\n", cls);
    w.len = n > 0 ? (size_t)n : 0;
    if (lbfgs) {
        put_num(&w, "MaxIterations", o.max_iterations);
        put(&w, "LineSearchMethod", "'%s'", o.line_search_method);
        put_num(&w, "HistorySize", o.history_size);
        put_num(&w, "InitialInverseHessianFactor", o.initial_inverse_hessian_factor);
        if (o.initial_step_size == 0)
            put(&w, "InitialStepSize", "'auto'");
        else
            put_num(&w, "InitialStepSize", o.initial_step_size);
        put_num(&w, "MaxNumLineSearchIterations", o.max_num_line_search_iterations);
        put_num(&w, "GradientTolerance", o.gradient_tolerance);
        put_num(&w, "StepTolerance", o.step_tolerance);
    } else {
        if (!strcmp(o.solver, "sgdm"))
            put_num(&w, "Momentum", o.momentum);
        if (!strcmp(o.solver, "adam"))
            put_num(&w, "GradientDecayFactor", o.gradient_decay_factor);
        if (strcmp(o.solver, "sgdm")) {
            put_num(&w, "SquaredGradientDecayFactor", o.squared_gradient_decay_factor);
            put_num(&w, "Epsilon", o.epsilon);
        }
        put_num(&w, "InitialLearnRate", o.initial_learn_rate);
        put_num(&w, "MaxEpochs", o.max_epochs);
        put(&w, "LearnRateSchedule", "'%s'", o.learn_rate_schedule.method);
        put_num(&w, "LearnRateDropFactor", o.learn_rate_schedule.drop_factor < 0 ? 0
                                           : o.learn_rate_schedule.drop_factor);
        put_num(&w, "LearnRateDropPeriod", o.learn_rate_schedule.drop_period);
        /* The schedule objects' parameters, where the schedule reads them. */
        const dla_learn_rate_schedule *ls = &o.learn_rate_schedule;
        const int cosine = !strcmp(ls->method, "cosine");
        const int cyclical = !strcmp(ls->method, "cyclical"), warmup = !strcmp(ls->method, "warmup");
        if (cosine || warmup || !strcmp(ls->method, "polynomial")) {
            if (!warmup)
                put_num(&w, "InitialFactor", ls->initial_factor);
            else
                put_num(&w, "InitialFactor", ls->warmup_start_factor);
            put_num(&w, "FinalFactor", ls->final_factor);
        }
        if (cosine || cyclical)
            put_num(&w, "Period", ls->period);
        if (cosine)
            put_num(&w, "PeriodGrowthFactor", ls->period_growth_factor);
        if (!cosine && !cyclical && (warmup || !strcmp(ls->method, "polynomial")))
            put_num(&w, "NumSteps", ls->period);
        if (!strcmp(ls->method, "polynomial"))
            put_num(&w, "Power", ls->power);
        if (cyclical) {
            put_num(&w, "MaxFactor", ls->max_factor);
            put_num(&w, "StepRatio", ls->step_ratio);
        }
        if (strcmp(ls->method, "none") && strcmp(ls->method, "custom"))
            put(&w, "FrequencyUnit", "'%s'", ls->frequency_unit);
        if (ls->next)
            put(&w, "LearnRateSchedule list", "%s", "(more schedules follow; see `next`)");
        put_num(&w, "MiniBatchSize", (double)o.mini_batch_size);
        put(&w, "Shuffle", "'%s'", o.shuffle);
        put(&w, "PartialMiniBatch", "'%s'", o.partial_mini_batch);
    }
    put_num(&w, "CheckpointFrequency", o.checkpoint_frequency);
    put(&w, "CheckpointFrequencyUnit", "'%s'", o.checkpoint_frequency_unit);
    put(&w, "SequenceLength", "%s%s%s", dla__train_parse_sequence_length(o.sequence_length) > 0 ? "" : "'",
        o.sequence_length, dla__train_parse_sequence_length(o.sequence_length) > 0 ? "" : "'");
    put_num(&w, "SequencePaddingValue", o.sequence_padding_value);
    put(&w, "SequencePaddingDirection", "'%s'", o.sequence_padding_direction);
    put_num(&w, "DispatchInBackground", o.dispatch_in_background != 0);
    put_num(&w, "ResetInputNormalization", o.reset_input_normalization);
    put(&w, "BatchNormalizationStatistics", "'%s'", o.batch_normalization_statistics);
    put(&w, "OutputNetwork", "'%s'", o.output_network);
    if (!lbfgs) {
        put_num(&w, "L2Regularization", o.l2_regularization);
        put(&w, "GradientThresholdMethod", "'%s'", o.gradient_threshold_method);
        put_num(&w, "GradientThreshold", o.gradient_threshold);
    }
    put_num(&w, "Verbose", o.verbose);
    put_num(&w, "VerboseFrequency", o.verbose_frequency);
    put(&w, "ValidationData", "%s", o.validation_data ? "[1x1 struct]" : "[]");
    put_num(&w, "ValidationFrequency", o.validation_frequency);
    put_num(&w, "ValidationPatience", o.validation_patience ? o.validation_patience : INFINITY);
    put(&w, "Metrics", o.metrics && *o.metrics ? "\"%s\"" : "[]%s", o.metrics && *o.metrics ? o.metrics : "");
    put(&w, "ExecutionEnvironment", "'%s'", o.execution_environment);
    put(&w, "Plots", "'%s'", o.plots);
    put(&w, "OutputFcn", "%s", o.output_fn ? "[function]" : "[]");
    put(&w, "CheckpointPath", "'%s'", o.checkpoint_path ? o.checkpoint_path : "");
    return (int)w.len;
}

/* The priority a device ranks with: its type's in its manifest's
 * priority_by_type, else its plugin's priority (core/registry.c). */
static int priority_of(const dla_device *dev) { return dla__device_priority(dev); }

DLA_API dla_status dla_training_device(const char *environment, dla_device **out)
{
    if (!out)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_training_device: out is NULL");
    *out = NULL;
    const char *env = environment ? pick(environments, environment) : environments[0];
    if (!env)
        return bad_string_in("dla_training_device", "ExecutionEnvironment", environment,
                             environments);
    if (!strcmp(env, "parallel") || !strcmp(env, "multi-gpu"))
        return dla__train_par_device(env, out);
    if (!strcmp(env, "auto")) {
        *out = dla_device_current();
        return *out ? DLA_OK
                    : dla_set_error(DLA_ERR_NO_DEVICE,
                                    "dla_training_device: ExecutionEnvironment \"auto\": no device: %s",
                                    dla_last_error());
    }
    int cpu = !strcmp(env, "cpu"), n = dla_device_count(), best = 0;
    dla_device *pick_dev = NULL;
    char found[512] = "";
    for (int i = 0; i < n; i++) {
        dla_device *d = dla_device_at(i);
        if (!d) /* it could not be opened: not one to train on */
            continue;
        const char *type = dla_device_type(d);
        size_t len = strlen(found);
        snprintf(found + len, sizeof found - len, "%s%s (%s)", len ? ", " : "", dla_device_name(d),
                 type);
        if (cpu) {
            if (!pick_dev && !strcmp(type, "cpu"))
                pick_dev = d;
            continue;
        }
        /* Priorities may be negative (a manifest's integer): the first
         * device that is not a cpu is taken whatever its priority. */
        int pr = priority_of(d);
        if (strcmp(type, "cpu") && (!pick_dev || pr > best)) {
            best = pr;
            pick_dev = d;
        }
    }
    if (pick_dev) {
        *out = pick_dev;
        return DLA_OK;
    }
    if (cpu)
        return dla_set_error(DLA_ERR_NO_DEVICE,
                             "dla_training_device: ExecutionEnvironment \"cpu\": no cpu device is "
                             "loaded (found: %s)", *found ? found : "no device at all");
    return dla_set_error(DLA_ERR_NO_DEVICE,
                         "dla_training_device: ExecutionEnvironment \"gpu\": no device other than "
                         "a cpu is loaded (found: %s); install a GPU plugin (its manifest in "
                         "DLACCEL_PLUGIN_PATH or the installed plugins.d; `dlaccel devices` lists "
                         "what was found and why each loaded or not), or use \"auto\" or \"cpu\"",
                         *found ? found : "no device at all");
}
