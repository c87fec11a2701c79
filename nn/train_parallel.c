/*
 * train_parallel.c - trainnet's workers: ExecutionEnvironment "parallel"
 * and "multi-gpu" (docs/parallel.md, "Training").
 *
 * Every rank runs trainnet's loop on its share of each mini-batch (of
 * the mini-batches one process trains on); where the loop would use a
 * figure of the whole batch (the loss, the gradients, the
 * batch-normalization state, the metrics) the workers combine theirs, so that each applies the same
 * update to the same network and takes the same decisions (stop, diverged,
 * validation). The workers also agree on every failure: a rank that fails
 * alone would otherwise leave the others waiting in the next collective
 * for ever.
 */
#define _GNU_SOURCE /* secure_getenv, through env_choice.h */
#include <dlaccel.h>

#include "core/env_choice.h"
#include "core/log.h"
#include "core/registry.h"
#include "nn/data_mbq.h"
#include "nn/spmd_impl.h"
#include "nn/train_impl.h"
#include "nn/train_parallel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "parallel": the rank's device. MATLAB trains on the workers' GPUs when
 * the pool has them, a unique one each; here every rank's default would be
 * the same first GPU, where the ranks queue on one device while the others
 * idle, and NCCL refuses a group that holds one GPU twice. So when the
 * device is the default and not a GPU named with its index (DLACCEL_DEVICE
 * "cuda:1", or one the program made current), each rank takes the device
 * of the default's plugin at its local rank, as "multi-gpu" does, round
 * the plugin's devices when the machine has more ranks than devices. A cpu
 * stays as it is: its plugin shares out the cores itself. */
static dla_device *parallel_device(dla_device *cur)
{
    const int local = dla_spmd_local_rank(), ranks = dla_spmd_local_size();
    if (ranks <= 1 || !strcmp(dla_device_type(cur), "cpu") || cur != dla_device_default() ||
        dla__device_default_pinned())
        return cur;
    /* The plugin's devices by name ("cuda:0", "cuda:1", ...), so that no
     * other plugin's device is opened for this. */
    dla_device *same[64];
    int n = 0;
    for (int i = 0; i < 64; i++) {
        char name[96];
        snprintf(name, sizeof name, "%s:%d", dla_device_plugin(cur), i);
        dla_device *d = dla_device_get(name);
        if (!d)
            break;
        if (!strcmp(dla_device_type(d), dla_device_type(cur)))
            same[n++] = d;
    }
    dla_clear_error(); /* past the last device, or one that would not open */
    if (n <= 1)
        return cur;
    dla_device *mine = same[local % n];
    if (ranks > n && local == 0)
        dla__log(DLA_LOG_WARN,
                 "ExecutionEnvironment \"parallel\": %d ranks on this machine share its %d %s "
                 "devices (rank by rank, round them); start at most %d for a device each",
                 ranks, n, dla_device_plugin(cur), n);
    dla__log(DLA_LOG_INFO, "ExecutionEnvironment \"parallel\": local rank %d of %d on %s", local,
             ranks, dla_device_name(mine));
    return mine;
}

dla_status dla__train_par_device(const char *env, dla_device **out)
{
    if (!strcmp(env, "parallel")) {
        dla_device *cur = dla_device_current();
        if (!cur)
            return dla_set_error(DLA_ERR_NO_DEVICE,
                                 "dla_training_device: ExecutionEnvironment \"parallel\": no "
                                 "device: %s", dla_last_error());
        *out = parallel_device(cur);
        return DLA_OK;
    }
    /* "multi-gpu": the devices that are not a cpu, in the registry's order. */
    int n = dla_device_count(), local = dla_spmd_local_rank(), ranks = dla_spmd_local_size();
    int gpus = 0;
    dla_device *mine = NULL;
    char found[512] = "";
    for (int i = 0; i < n; i++) {
        dla_device *d = dla_device_at(i);
        size_t len = strlen(found);
        snprintf(found + len, sizeof found - len, "%s%s (%s)", len ? ", " : "", dla_device_name(d),
                 dla_device_type(d));
        if (!strcmp(dla_device_type(d), "cpu"))
            continue;
        if (gpus == local)
            mine = d;
        gpus++;
    }
    if (!gpus)
        return dla_set_error(DLA_ERR_NO_DEVICE,
                             "dla_training_device: ExecutionEnvironment \"multi-gpu\": this machine "
                             "has no GPU (found: %s); use \"parallel\" to train with one worker per "
                             "rank on the CPU", *found ? found : "no device at all");
    if (ranks > gpus || !mine)
        return dla_set_error(DLA_ERR_NO_DEVICE,
                             "dla_training_device: ExecutionEnvironment \"multi-gpu\": %d ranks run "
                             "on this machine but it has %d GPU%s (found: %s): start one rank per "
                             "GPU (mpirun -np %d), or use \"parallel\"",
                             ranks, gpus, gpus == 1 ? "" : "s", found, gpus);
    *out = mine;
    return DLA_OK;
}

/* DLACCEL_OVERLAP: 0, off or no turn the overlap off; 1, on, yes or unset
 * leave it on. Checked, as the other variables of a fixed set: only "0"
 * counted, and "off" left the overlap on without a word. */
static int overlap_wanted(void)
{
    static const char *const values[] = {"1", "on", "yes", "0", "off", "no", NULL};
    static atomic_int warned;
    return dla__env_choice("DLACCEL_OVERLAP", values, &warned, dla__log) < 3;
}

void dla__train_par_begin(dla__train_par *p, dla_training_options *o)
{
    memset(p, 0, sizeof *p);
    const char *env = o->execution_environment;
    p->on = env && (!strcmp(env, "parallel") || !strcmp(env, "multi-gpu"));
    p->rank = p->on ? dla_spmd_rank() : 0;
    p->size = p->on ? dla_spmd_size() : 1;
    /* Overlapped unless DLACCEL_OVERLAP says off, where the communicator
     * can; read at every call, so a misspelt value is named in one process
     * as well. */
    const int wanted = overlap_wanted();
    p->overlap = p->on && p->size > 1 && wanted && dla_spmd_overlaps();
    if (p->on && p->rank != 0) {
        /* Rank 0 alone prints, draws and writes checkpoints. */
        o->verbose = 0;
        o->plots = "none";
        o->checkpoint_path = NULL;
    }
}

/* Every rank's k doubles into all (k * size, rank after rank). */
static dla_status gather(const double *mine, int k, double *all)
{
    dla_scope_begin();
    dla_tensor *x = dla_tensor_from_host(mine, DLA_F64, "", DLA_DIMS(k)), *y = NULL;
    dla_status st = dla_tensor_status(x);
    if (st == DLA_OK)
        st = dla_allgather(x, &y);
    if (st == DLA_OK) {
        st = dla_tensor_to_host(y, all, sizeof *all * (size_t)k * (size_t)dla_spmd_size());
    }
    dla_scope_end();
    return st;
}

/* Agrees on st with k more values per rank (into all, k+1 per rank: the
 * failure flag first). */
static dla_status agree_with(const dla__train_par *p, dla_status st, const char *when, int k,
                             const double *mine, double *all)
{
    double v[8];
    v[0] = st != DLA_OK;
    for (int i = 0; i < k; i++)
        v[1 + i] = mine[i];
    char msg[1024] = "";
    if (st != DLA_OK)
        snprintf(msg, sizeof msg, "%s", dla_last_error());
    dla_status gs = gather(v, k + 1, all);
    if (gs != DLA_OK) {
        char why[1024];
        snprintf(why, sizeof why, "%s", dla_last_error());
        return dla_set_error(gs, "dla_trainnet: rank %d: %s: the workers could not meet: %s",
                             p->rank, when, why);
    }
    char ranks[256] = "";
    int failed = 0;
    for (int r = 0; r < p->size; r++)
        if (all[r * (k + 1)] != 0) {
            size_t len = strlen(ranks);
            snprintf(ranks + len, sizeof ranks - len, "%s%d", failed++ ? ", " : "", r);
        }
    if (!failed)
        return DLA_OK;
    if (st != DLA_OK)
        return dla_set_error(st, "%s", msg);
    return dla_set_error(DLA_ERR_STATE, "dla_trainnet: %s: rank%s %s failed (its message is on "
                         "that rank); rank %d stops with it", when, failed > 1 ? "s" : "", ranks,
                         p->rank);
}

dla_status dla__train_par_agree(const dla__train_par *p, dla_status st, const char *when)
{
    if (!p->on || p->size == 1)
        return st;
    double all[1024];
    if (p->size > 1024)
        return st;
    return agree_with(p, st, when, 0, NULL, all);
}

dla_status dla__train_par_setup(dla__train_par *p, dla_net *net, dla_mbq **q,
                                const dla_training_options *o, int64_t *iterations)
{
    if (!p->on)
        return DLA_OK;
    dla_status st = dla_spmd_broadcast_net(net, 0);
    if (st != DLA_OK)
        return st;
    p->global = o->mini_batch_size;
    p->share = dla_spmd_share(p->global);
    /* Every worker passes over the whole data in the order one process
     * would (the same queue, the same seed, the same shuffles) and takes
     * its share of each mini-batch: the workers' shares of an iteration
     * make the mini-batch one process trains on, the partial last one
     * included, and every worker has one process's number of iterations.
     * (Until 2026-11-29 the data were shuffled once more and cut into one
     * contiguous part per worker, reshuffled with a stream of its own: no
     * iteration was one process's mini-batch, a world of one trained on
     * another order than "auto", and the epoch ended with the part that
     * had the fewest batches.) */
    st = dla__mbq_set_worker(*q, p->size, p->rank);
    if (st != DLA_OK)
        return st;
    *iterations = dla_mbq_num_batches(*q);
    return DLA_OK;
}

int dla__train_par_hasdata(dla__train_par *p, dla_mbq *q, dla_status *st)
{
    if (!p->on)
        return dla_mbq_hasdata(q);
    bool all = false;
    *st = dla_spmd_all(dla_mbq_hasdata(q) != 0, &all);
    return *st == DLA_OK && all;
}

static void hook_ready(void *ctx, int index, dla_tensor *grad)
{
    dla__train_par *p = ctx;
    dla__overlap_ready(p->ov, index + 1, grad); /* 0 is the loss */
}

static void hook_between(void *ctx)
{
    dla__train_par *p = ctx;
    dla__overlap_tick(p->ov);
}

/* The share of the whole batch's figures this rank's are: of its valid
 * steps when by_steps (a mean over them), else of its observations. */
static double share_of(const dla__train_par *p, int by_steps)
{
    const double mine = by_steps ? p->mine_steps : p->mine_count;
    const double global = by_steps ? p->steps_global : p->step_global;
    /* No valid step anywhere: every loss is a sum of nothing, 0. */
    return global > 0 ? mine / global : 0.0;
}

/* Every rank's observations and valid steps of this batch, summed. */
static dla_status agree_batch(dla__train_par *p, dla_status st, const char *when)
{
    double mine[3] = {p->mine_count, p->mine_steps, p->learn_rate}, all[1024 * 4];
    st = agree_with(p, st, when, 3, mine, all);
    if (st != DLA_OK)
        return st;
    p->step_global = p->steps_global = 0;
    for (int r = 0; r < p->size; r++) {
        p->step_global += all[4 * r + 1];
        p->steps_global += all[4 * r + 2];
    }
    /* The same update on every rank needs the same rate: a schedule
     * function that answers otherwise on one rank (its own clock, state
     * of its own) left each rank with another network, with DLA_OK. The
     * same gathered values give every rank the same verdict. */
    for (int r = 1; r < p->size; r++)
        if (!(all[4 * r + 3] == all[3]))
            return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                                 "ExecutionEnvironment \"parallel\": rank %d's LearnRateSchedule "
                                 "gave the learning rate %.17g where rank 0's gave %.17g (every "
                                 "rank updates alike: a schedule function must give every rank "
                                 "the same rate)",
                                 r, all[4 * r + 3], all[3]);
    return DLA_OK;
}

dla_status dla__train_par_prestep(dla__train_par *p, dla_status st, dla_net *net, int64_t count,
                                  double steps, int nl)
{
    /* A worker without a share ran on one observation it must not count. */
    p->mine_count = p->empty ? 0.0 : (double)count;
    p->mine_steps = p->empty ? 0.0 : steps;
    if (!p->overlap)
        return st;
    st = agree_batch(p, st, "the batch");
    if (st != DLA_OK)
        return st;
    /* By observations until the loss says otherwise
     * (dla__train_par_backward). */
    p->weight = share_of(p, 0);
    /* The buckets of {loss, gradients}, as dla__train_par_step's blocking
     * path fills them: the loss a scalar of the learnables' dtype. */
    dla_tensor **like = dla_malloc(sizeof *like * (size_t)(nl + 1));
    if (!like)
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
    dla_table *lt = dla_net_learnables(net);
    dla_scope_begin();
    for (int i = 0; i < nl; i++)
        like[i + 1] = dla_table_value(lt, i);
    like[0] = dla_zeros(nl ? dla_tensor_dtype(like[1]) : DLA_F32, "", DLA_DIMS(1));
    p->ov = dla__overlap_begin(nl + 1, like, p->weight);
    dla_scope_end();
    dla_free(like);
    p->hooks = (dla_gradient_hooks){.ready = hook_ready, .between = hook_between, .ctx = p};
    return p->ov ? DLA_OK : dla_last_status();
}

const dla_gradient_hooks *dla__train_par_backward(dla__train_par *p, dla_tensor *loss,
                                                 int by_steps)
{
    if (!p->ov)
        return NULL;
    p->weight = share_of(p, by_steps);
    dla__overlap_set_weight(p->ov, p->weight);
    dla__overlap_ready(p->ov, 0, loss);
    return &p->hooks;
}

/* The step with overlapped reductions: the buckets the sweep did not
 * start are started, every one is waited for, and the workers agree on
 * the step's status. */
static dla_status overlapped_step(dla__train_par *p, dla_status st, int nl, dla_tensor **out)
{
    dla_tensor **lg = dla__overlap_io(p->ov);
    lg[0] = out[0];
    memcpy(lg + 1, out + 2, sizeof *lg * (size_t)nl);
    dla__overlap_times t = {0};
    /* The buckets the sweep left are reduced at once; then the workers
     * agree on the step (a rank's own failure is what the others report,
     * not the buckets it made fail), and every bucket is waited for. */
    char msg[1024] = "";
    if (st != DLA_OK)
        snprintf(msg, sizeof msg, "%s", dla_last_error());
    dla__overlap_flush(p->ov, st, lg);
    if (st != DLA_OK)
        dla_set_error(st, "%s", msg);
    double none = 0, all[1024 * 2];
    dla_status agreed = agree_with(p, st, "the step", 1, &none, all);
    char why[1024] = "";
    if (agreed != DLA_OK)
        snprintf(why, sizeof why, "%s", dla_last_error());
    dla_status red = dla__overlap_end(p->ov, agreed, lg, lg, &t);
    if (agreed != DLA_OK)
        dla_set_error(agreed, "%s", why);
    p->flight_seconds += t.flight;
    p->after_seconds += t.after;
    p->step_after = t.after;
    p->buckets += t.buckets;
    p->started_early += t.started_early;
    st = agreed;
    if (st == DLA_OK && red != DLA_OK)
        st = red;
    if (st == DLA_OK) {
        out[0] = lg[0];
        memcpy(out + 2, lg + 1, sizeof *lg * (size_t)nl);
    }
    dla__overlap_free(p->ov);
    p->ov = NULL;
    return st;
}

dla_status dla__train_par_step(dla__train_par *p, dla_status st, dla_net *net, int by_steps,
                               int64_t seq_len, int nl, int ns, dla_tensor **out)
{
    if (!p->on)
        return st;
    double t0 = clock_now(), r0 = dla__spmd_reduce_seconds();
    p->batches++;
    if (p->ov) {
        st = overlapped_step(p, st, nl, out);
        if (st == DLA_OK && ns)
            st = dla_spmd_combine_state_seq(net, ns, out + 2 + nl, (int64_t)p->mine_count,
                                            (int64_t)p->step_global, seq_len, out + 2 + nl);
        p->step_seconds += clock_now() - t0;
        return st;
    }
    st = agree_batch(p, st, "the step");
    if (st != DLA_OK)
        return st;
    /* The loss and the gradients in one combination: out[0] and out[2..]. */
    dla_tensor **lg = dla_malloc(sizeof *lg * (size_t)(nl + 1));
    if (!lg)
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
    lg[0] = out[0];
    memcpy(lg + 1, out + 2, sizeof *lg * (size_t)nl);
    st = dla_spmd_combine(nl + 1, lg, share_of(p, by_steps), lg);
    if (st == DLA_OK) {
        out[0] = lg[0];
        memcpy(out + 2, lg + 1, sizeof *lg * (size_t)nl);
    }
    dla_free(lg);
    p->step_after = clock_now() - t0;
    p->after_seconds += p->step_after;
    if (st == DLA_OK && ns)
        st = dla_spmd_combine_state_seq(net, ns, out + 2 + nl, (int64_t)p->mine_count,
                                        (int64_t)p->step_global, seq_len, out + 2 + nl);
    p->reduce_seconds += dla__spmd_reduce_seconds() - r0;
    p->step_seconds += clock_now() - t0;
    return st;
}

dla_status dla__train_par_metrics(dla__train_par *p, dla_status st, int metrics, int by_steps,
                                  double acc_over, double *acc, double *rmse)
{
    if (!p->on || p->size == 1)
        return st;
    double w = by_steps ? p->mine_steps : p->mine_count;
    /* An accuracy over the steps that hold a class (class numbers per
     * step of an output of other steps than the input's) weighs them:
     * weighted by observations, the workers' accuracies were not the
     * batch's when their shares held other numbers of such steps. */
    double aw = acc_over >= 0 && w > 0 ? acc_over : w;
    /* Accuracy is a mean over observations (or valid steps), RMSE the
     * root of a mean over elements (observations or valid steps times
     * the same dims on every worker). A NaN of a worker with a share makes
     * the whole batch's NaN, as in one process (its figure was left out,
     * and the other workers reported their own shares' as the batch's); a
     * worker without one adds nothing, whatever its placeholder gave. */
    const int a_on = (metrics & DLA__METRIC_ACCURACY) != 0, r_on = (metrics & DLA__METRIC_RMSE) != 0;
    double mine[4] = {w, aw, a_on && aw > 0 ? aw * *acc : 0, r_on && w > 0 ? w * *rmse * *rmse : 0};
    double all[1024 * 5];
    st = agree_with(p, st, "the metrics", 4, mine, all);
    if (st != DLA_OK)
        return st;
    double n = 0, na = 0, a = 0, r = 0;
    for (int k = 0; k < p->size; k++) {
        n += all[5 * k + 1];
        na += all[5 * k + 2];
        a += all[5 * k + 3];
        r += all[5 * k + 4];
    }
    *acc = a_on ? a / na : NAN;
    *rmse = r_on ? sqrt(r / n) : NAN;
    return DLA_OK;
}

dla_status dla__train_par_failed_batch(dla__train_par *p, dla_status st)
{
    if (!p->on || p->size == 1)
        return st;
    /* The meetings of an iteration (dla__train_par_prestep, _step and
     * _metrics), each with this rank's failure: the others learn of it
     * where they meet it, in the same collectives. */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", dla_last_error());
    dla__train_par_prestep(p, st, NULL, 0, 0, 0);
    dla_set_error(st, "%s", msg);
    dla__train_par_step(p, st, NULL, 0, 0, 0, 0, NULL);
    dla_set_error(st, "%s", msg);
    double nan = NAN, nan2 = NAN;
    dla__train_par_metrics(p, st, 0, 0, -1, &nan, &nan2);
    return dla_set_error(st, "%s", msg);
}

dla_status dla__train_par_end(dla__train_par *p, dla_status st, int *stop)
{
    if (!p->on || p->size == 1)
        return st;
    /* With the stop flag, this step's time from the backward's end until
     * the gradients were combined: its least over the ranks is the last
     * rank's to end its backward, which waited for no other, so it is the
     * reductions' own cost, whatever the ranks' skew. */
    double mine[2] = {*stop != 0, p->step_after}, all[1024 * 3];
    st = agree_with(p, st, "the end of the iteration", 2, mine, all);
    double least = INFINITY;
    for (int r = 0; st == DLA_OK && r < p->size; r++) {
        *stop |= all[3 * r + 1] != 0;
        least = fmin(least, all[3 * r + 2]);
    }
    if (st == DLA_OK && p->step_after > 0)
        p->after_last_seconds += least;
    p->step_after = 0;
    return st;
}

void dla__train_par_describe(const dla__train_par *p, const dla_device *dev, char *buf, size_t size)
{
    *buf = '\0';
    if (!p->on)
        return;
    int64_t shares[1024];
    if (p->size > 1024 || dla_spmd_shares(p->global, p->size, shares) != DLA_OK)
        return;
    int n = snprintf(buf, size, "Training in parallel: %d worker%s (%s), rank 0 on %s; "
                     "mini-batch %lld shared as ", p->size, p->size == 1 ? "" : "s",
                     dla_spmd_backend(), dla_device_name((dla_device *)dev), (long long)p->global);
    for (int r = 0; r < p->size && n > 0 && (size_t)n < size; r++)
        n += snprintf(buf + n, size - (size_t)n, "%s%lld", r ? " + " : "", (long long)shares[r]);
    if (n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, ".\n");
}

typedef struct worker_report {
    int32_t rank;
    int32_t overlap;
    int64_t batches;
    double step_seconds, reduce_seconds;
    double flight_seconds, after_seconds, after_last_seconds;
    int64_t buckets, started_early;
} worker_report;

void dla__train_par_report(dla__train_par *p, int verbose, void (*say)(void *ctx, const char *),
                           void *ctx)
{
    if (!p->on || p->size == 1)
        return;
    dla_dataqueue *q = NULL;
    if (dla_dataqueue_create(&q) != DLA_OK)
        return;
    worker_report me = {p->rank,          p->overlap,         p->batches,
                        p->step_seconds,  p->reduce_seconds,  p->flight_seconds,
                        p->after_seconds,   p->after_last_seconds, p->buckets,       p->started_early};
    dla_dataqueue_send(q, &me, sizeof me);
    if (p->rank == 0) {
        /* Rank 0 takes one message from each worker (its own included),
         * as they come, and writes them in rank order. */
        worker_report *all = dla_malloc(sizeof *all * (size_t)p->size);
        int got = 0;
        /* A worker whose send failed is not waited for past a minute. */
        double until = clock_now() + 60;
        while (all && got < p->size && clock_now() < until) {
            worker_report r;
            int from;
            size_t sz;
            int k = dla_dataqueue_poll(q, &r, sizeof r, &from, &sz);
            if (k < 0)
                break;
            if (k == 1 && sz == sizeof r && r.rank >= 0 && r.rank < p->size)
                all[got++] = r;
        }
        for (int w = 0; all && verbose && w < p->size; w++)
            for (int i = 0; i < got; i++) {
                if (all[i].rank != w)
                    continue;
                char line[384];
                const worker_report *r = &all[i];
                if (r->overlap)
                    /* The reductions ran during the backward pass: what is
                     * left of them when it ends is their cost. */
                    snprintf(line, sizeof line, "Worker %d: %lld mini-batches, %.3f s combining; "
                             "reductions overlapped (%lld of %lld buckets started during the "
                             "backward), %.3f s in flight; gradients ready %.3f s after the "
                             "backward (%.3f s for the last rank to end it)\n", w,
                             (long long)r->batches, r->step_seconds, (long long)r->started_early,
                             (long long)r->buckets, r->flight_seconds, r->after_seconds,
                             r->after_last_seconds);
                else
                    snprintf(line, sizeof line, "Worker %d: %lld mini-batches, %.3f s combining "
                             "(%.3f s of it in allreduce, all exposed); gradients ready %.3f s "
                             "after the backward (%.3f s for the last rank to end it)\n", w,
                             (long long)r->batches, r->step_seconds, r->reduce_seconds,
                             r->after_seconds, r->after_last_seconds);
                say(ctx, line);
            }
        dla_free(all);
    }
    dla_dataqueue_free(q);
}

void dla__train_par_free(dla__train_par *p)
{
    dla__overlap_free(p->ov);
    p->ov = NULL;
    dla_mbq_free(p->whole);
    p->whole = NULL;
}
