/*
 * dlaccel/loss.h - included by dlaccel.h; do not include it directly.
 *
 * Losses (crossentropy, binary cross-entropy, mse, l1loss, l2loss, huber,
 * ctc), one-hot encoding and decoding, concatenation, padding, indexing,
 * and the comparisons and where that masks and accuracies are made of.
 *
 *     // MATLAB: loss = crossentropy(Y, T, classWeights, WeightsFormat="C");
 *     dla_tensor *loss = dla_crossentropy(y, t, &(dla_crossentropy_options){
 *         .weights = class_weights});
 *     // MATLAB: acc = mean(onehotdecode(Y, classes, 1) == labels);
 *     dla_tensor *hit = dla_eq(dla_onehotdecode(y, NULL), labels);
 *
 * All ops here follow the conventions of dlaccel.h: sticky errors, scopes,
 * 1-based dims, 0-based element (and class) indices. Options structs are
 * optional (NULL) and zero-initialized fields mean MATLAB's defaults; string
 * options take MATLAB's values ("all-elements") and NULL or "" for the
 * default. Differentiable means dla_gradient can go through the op.
 */
/* Before the guard: included first, this header still comes in dlaccel.h's
 * order, after the declarations it uses. */
#include <dlaccel.h>
#ifndef DLACCEL_LOSS_H
#define DLACCEL_LOSS_H

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ losses */

/* What the losses share.
 *
 * Formats. Y must be formatted, or unformatted with data_format naming its
 * labels (MATLAB's DataFormat; any order, as dlarray takes it). Targets have
 * Y's dims: formatted with Y's format, or unformatted in Y's layout. A
 * target of another dtype (int32 labels, logical) is converted to Y's.
 *
 * Weights and mask. Both broadcast against Y by label. A formatted weights
 * or mask tensor is matched label by label (its k-th S dim to Y's k-th S
 * dim); each of its dims must equal Y's or be 1, and every label it has
 * must be one of Y's (weights_format may repeat its format; other labels
 * there are refused). An unformatted one takes weights_format when given
 * (MATLAB's WeightsFormat); otherwise a weights vector with as many
 * elements as Y has channels is a class-weight vector ("C"), and anything
 * else is read in Y's own layout with implicit expansion. The mask may be
 * logical or numeric. Weights are differentiable; the mask is not.
 *
 * With e the elementwise loss of the function, W the weights (1 when none)
 * and M the mask (1 when none), the loss with reduction "sum" (default) is
 *     loss = sum(W .* M .* e, "all") / N
 * where an element the mask excludes (M = 0) adds exactly 0, whatever Y
 * and the targets hold there, to the loss and to every gradient: a NaN
 * target of an excluded element (MATLAB's semantic segmentation example
 * marks unlabeled pixels NaN in T and masks them with ~isnan(T)) does not
 * make them NaN. N is the normalization factor:
 *     "batch" (or "batch-size"): the size of Y's B dim (1 when Y has no B).
 *         This is the default of every loss here.
 *     "all-elements": numel(Y).
 *     "mask-included": each observation (each index along B, or the whole
 *         array when Y has no B) is divided by its own count of included
 *         elements, sum(M) over that observation with M expanded to Y's
 *         size, and the results are added up. An observation with nothing
 *         included adds 0. Needs a mask.
 *     "none": 1.
 * The result is an unformatted 1x1 tensor of Y's dtype. Reduction "none"
 * returns W .* M .* e instead, with Y's dims and format (with data_format:
 * unformatted, in Y's layout), and ignores the normalization factor.
 *
 * Y is kept away from 0 (and 1 - Y in the independent case) inside log,
 * at realmin of its dtype, as MATLAB's classification layers do: a
 * softmax output that underflows gives a large finite loss, not NaN or
 * Inf. Where Y is below realmin the gradient is taken at realmin.
 *
 * Errors: DLA_ERR_FORMAT (Y unformatted without data_format, targets or
 * weights whose labels do not match), DLA_ERR_SHAPE (targets not of Y's
 * dims, named as a class-count mismatch when their C dims differ, with a
 * hint to one-hot encode targets of one class number per observation;
 * weights or mask that do not broadcast, class weights whose count is
 * not Y's channel count), DLA_ERR_DTYPE (Y not single or double),
 * DLA_ERR_INVALID_ARGUMENT (an unknown option value, "mask-included"
 * without a mask, tensors on different devices). Messages name the
 * function, the argument and the shapes. Differentiable with respect to Y,
 * targets and weights. */

typedef struct dla_crossentropy_options {
    /* "exclusive" (default): single-label classification, Y the output of
     * a softmax over C, targets one-hot or class probabilities;
     *     e = -T .* log(Y)
     * "independent": multi-label (binary per class), Y sigmoid outputs;
     *     e = -(T .* log(Y) + (1 - T) .* log(1 - Y))
     * MATLAB calls this TargetCategories (ClassificationMode in newer
     * releases: "single-label", "multilabel", which are accepted too). */
    const char *target_categories;
    /* Class weights (C elements) or any tensor that broadcasts against Y
     * (per observation, per element); NULL: none. Borrowed. */
    dla_tensor *weights;
    /* Labels of unformatted weights ("C", "CB", "BC"...); NULL: see above. */
    const char *weights_format;
    /* Logical or numeric, Y's size or broadcastable; NULL: none. */
    dla_tensor *mask;
    /* "batch" (default), "all-elements", "mask-included", "none". */
    const char *normalization_factor;
    /* "sum" (default) or "none". */
    const char *reduction;
    /* Labels of an unformatted Y ("CB", "CBT", "SSCB", "BC"...). */
    const char *data_format;
} dla_crossentropy_options;

/* MATLAB crossentropy(Y, targets, weights, Name=Value), as above. For
 * sequence data ("CBT") the time steps add up within each observation, so
 * the default "batch" factor gives the mean over observations of the
 * summed-over-time loss. opts may be NULL. */
DLA_API dla_tensor *dla_crossentropy(dla_tensor *y, dla_tensor *targets,
                                     const dla_crossentropy_options *opts);

/* Binary cross-entropy: dla_crossentropy with target_categories
 * "independent" (whatever opts says there), for sigmoid outputs Y in
 * (0, 1) and targets in [0, 1] of Y's size. opts may be NULL. */
DLA_API dla_tensor *dla_binary_crossentropy(dla_tensor *y, dla_tensor *targets,
                                            const dla_crossentropy_options *opts);

/* Options of l1loss, l2loss and mse (mse takes only data_format). */
typedef struct dla_regression_loss_options {
    dla_tensor *weights;              /* NULL: none. Borrowed. */
    const char *weights_format;       /* labels of unformatted weights */
    dla_tensor *mask;                 /* NULL: none. Borrowed. */
    const char *normalization_factor; /* "batch-size" (default), ... */
    const char *reduction;            /* "sum" (default) or "none" */
    const char *data_format;          /* labels of an unformatted Y */
} dla_regression_loss_options;

/* MATLAB l1loss: e = abs(Y - T). With the defaults this is the sum of the
 * absolute errors over each observation, averaged over observations (the
 * mean absolute error when an observation has one response). */
DLA_API dla_tensor *dla_l1loss(dla_tensor *y, dla_tensor *targets,
                               const dla_regression_loss_options *opts);
/* MATLAB l2loss: e = (Y - T).^2, not halved. With the defaults: the sum of
 * the squared errors per observation, averaged over observations. */
DLA_API dla_tensor *dla_l2loss(dla_tensor *y, dla_tensor *targets,
                               const dla_regression_loss_options *opts);
/* MATLAB mse, the half mean squared error:
 *     loss = sum((Y - T).^2, "all") / (2 * N)
 * with N the number of observations (the size of the B dim; 1 without one),
 * so its gradient is (Y - T) / N. opts may be NULL, and may set only
 * data_format: MATLAB's mse has no weights, mask, normalization or
 * reduction options, and any of them set is DLA_ERR_INVALID_ARGUMENT
 * naming it (ignoring it would leave a mask's padding in the loss; use
 * dla_l2loss, twice mse with its defaults, for them). */
DLA_API dla_tensor *dla_mse(dla_tensor *y, dla_tensor *targets,
                            const dla_regression_loss_options *opts);

/* Options of dla_huber: the regression losses' options and the transition
 * point. */
typedef struct dla_huber_options {
    /* MATLAB's TransitionPoint, delta: where the loss turns from quadratic
     * to linear; 0: 1 (MATLAB's default). Positive and finite. */
    double transition_point;
    dla_tensor *weights;              /* NULL: none. Borrowed. */
    const char *weights_format;       /* labels of unformatted weights */
    dla_tensor *mask;                 /* NULL: none. Borrowed. */
    const char *normalization_factor; /* "batch-size" (default), ... */
    const char *reduction;            /* "sum" (default) or "none" */
    const char *data_format;          /* labels of an unformatted Y */
} dla_huber_options;

/* MATLAB huber, the Huber loss (smooth L1 loss when delta is 1): with
 * d = Y - T,
 *     e = d.^2 / 2                   where |d| <= delta
 *     e = delta * |d| - delta^2 / 2  elsewhere
 * so the loss is quadratic near the target and grows only linearly with
 * outliers, with a continuous slope (d inside, delta * sign(d) outside).
 * Weights, mask, normalization and reduction as the other losses here
 * (the default "batch-size": the summed loss of an observation, averaged
 * over observations). opts may be NULL. Errors as above, and
 * DLA_ERR_INVALID_ARGUMENT for a transition point that is negative, NaN
 * or infinite. */
DLA_API dla_tensor *dla_huber(dla_tensor *y, dla_tensor *targets, const dla_huber_options *opts);

/* ---------------------------------------------------------------------- ctc */

/* Options of dla_ctc. */
typedef struct dla_ctc_options {
    /* Which channel of Y is the blank: "first" (default; channel 0) or
     * "last" (channel C-1). */
    const char *blank_index;
    /* "mean" (default): the mean over the observations of their losses,
     * a 1x1 tensor; "none": each observation's loss, 1 x B (formatted
     * "CB" when Y is formatted, unformatted with data_format). */
    const char *reduction;
    /* Labels of an unformatted Y: "CBT" in any order ("TBC"...). */
    const char *data_format;
} dla_ctc_options;

/* MATLAB ctc(Y, targets, YMask, targetsMask, Name=Value) (since R2021a):
 * the connectionist temporal classification loss between unaligned
 * sequences (Graves et al., 2006), for sequence labelling without a
 * per-step alignment (speech, handwriting). Of each observation b,
 *     loss(b) = -log( sum over the alignments p of the targets of
 *                     prod over the steps t of Y(p(t), b, t) )
 * where an alignment is a sequence of T channels that gives the target
 * sequence once repeats are merged and blanks removed (so a repeated
 * label needs a blank between its copies). Computed by the forward
 * (alpha) recursion in log space.
 *
 * What MATLAB's page says (https://mathworks.com/help/deeplearning/ref/
 * dlarray.ctc.html, the part of it that could be read): ctc "computes the
 * connectionist temporal classification (CTC) loss between unaligned
 * sequences"; Y is a formatted dlarray of predictions (DataFormat for an
 * unformatted one), targets the target values, YMask and targetsMask the
 * prediction and target masks, and "the function reduces the loss values
 * by taking the mean across the batch dimension". The rest below (what Y
 * holds, the layouts, the masks, BlankIndex, Reduction "none", a target
 * the input is too short for) is chosen as PyTorch's CTCLoss does, where
 * that was not readable.
 *
 * y: probabilities (a softmax over C already applied, as MATLAB's
 *    examples pass softmax(X)), C x B x T: formatted with exactly the
 *    labels C, B and T, or unformatted with data_format. C counts the
 *    blank. Values are kept at realmin and above inside the log, as the
 *    other losses here do; a NaN stays NaN (the loss of an observation
 *    whose alignments pass through it is NaN). Single or double.
 * targets: B x S class indices of Y's channels, 0-based as everywhere in
 *    dlaccel (MATLAB's are 1-based), never the blank; int32, uint8, single
 *    or double whole numbers; unformatted or labelled "BT". Padding
 *    (targetsMask 0) may hold any value.
 * y_mask: B x T (unformatted or "BT"), logical or numeric, or NULL (all
 *    steps). A step with 0 is skipped, as if it were not there: padding
 *    after a shorter sequence (PyTorch's input_lengths) leaves that
 *    observation's loss as it is without the padding, and Y is not read
 *    there (a NaN in the padding gives no NaN loss or gradient).
 * targets_mask: B x S, or NULL (all targets). Each row is ones (the
 *    observation's targets) then zeros (padding): PyTorch's
 *    target_lengths. A row with a hole is refused.
 *
 * "mean" divides the sum of the observations' losses by B, as MATLAB's
 * page says (PyTorch's "mean" first divides each by its target length;
 * dlaccel does not). A target sequence that the unmasked steps cannot
 * emit (fewer steps than its labels plus the blanks its repeats need)
 * has probability 0: its loss is Inf, as PyTorch's (without
 * zero_infinity), and its gradient is 0, not NaN, so the other
 * observations' gradients stay usable. Differentiable with respect to Y
 * (not the targets or the masks); written with public ops, so replay
 * plans and every plugin run it.
 *
 * The targets and targetsMask are checked on the host (one read each per
 * call), except while dla_accelerate records a trace (a host read would
 * freeze one call's control flow into it). The same checks run on the
 * device too: in a replay, an observation whose targets are not labels
 * of Y (outside 0..C-1, a fraction, the blank, a hole in its mask) gets
 * a NaN loss (and the mean is NaN), never the loss of another sequence.
 *
 * Errors: DLA_ERR_FORMAT (Y unformatted without data_format, Y's labels
 * not exactly C, B and T, targets or masks labelled other than "BT"),
 * DLA_ERR_SHAPE (targets or masks whose rows are not Y's observations,
 * YMask not B x T, targetsMask not of targets' size), DLA_ERR_DTYPE (Y not
 * single or double, logical targets), DLA_ERR_INVALID_ARGUMENT (a target
 * outside 0..C-1 or equal to the blank, a targetsMask row with a hole, an
 * unknown option value, tensors on different devices). opts may be NULL. */
DLA_API dla_tensor *dla_ctc(dla_tensor *y, dla_tensor *targets, dla_tensor *y_mask,
                            dla_tensor *targets_mask, const dla_ctc_options *opts);

/* ----------------------------------------------------------------- one-hot */

typedef struct dla_onehot_options {
    /* The class values in order (MATLAB's classes): a label equal to
     * classes[k] encodes as position k, and decoding position k gives
     * classes[k]; each value once (encoding refuses a repeated one).
     * NULL: the classes are 0, 1, ..., num_classes - 1. */
    const int32_t *classes;
    /* The dim along which classes lie (1-based; MATLAB's featureDim).
     * 0: the C dim of a formatted tensor, else dim 1. */
    int feature_dim;
    /* Encoding only: the result's dtype (MATLAB's TypeName). Zero is
     * DLA_F32, dlaccel's default, where MATLAB's default is double. */
    dla_dtype dtype;
} dla_onehot_options;

/* MATLAB onehotencode. labels holds class values (int32, uint8, or whole
 * numbers in a float tensor) with size 1 along the feature dim; the result
 * has labels' dims and format with num_classes there: 1 where the label is
 * the class, else 0. Not differentiable.
 *
 * The labels are checked: one that is none of the classes (outside
 * 0..num_classes-1, or not in opts->classes; a fraction or NaN) is
 * DLA_ERR_INVALID_ARGUMENT naming the first (labels[i], its 0-based index
 * in column-major order), the classes, and, when the labels look 1-based
 * (all lie in 1..num_classes, as trainnet's class numbers are checked),
 * that MATLAB numbers categories from 1 where dlaccel numbers classes
 * from 0. The
 * check reads the labels to the host (their bytes, once per call); the
 * encoding itself runs on the device. While dla_accelerate records a
 * trace the check is skipped (a host read would make the trace
 * data-dependent, replaying that call's control flow whatever the labels):
 * there a label that is none of the classes gives a column of zeros, so
 * check labels where they enter the program (dla_trainnet does, once per
 * data set).
 * Errors: DLA_ERR_INVALID_ARGUMENT (a label outside the classes, a class
 * value listed twice in opts->classes, num_classes < 1, a feature dim out
 * of range or not of size 1, no C dim to default to), DLA_ERR_DTYPE. */
DLA_API dla_tensor *dla_onehotencode(dla_tensor *labels, int64_t num_classes,
                                     const dla_onehot_options *opts);

/* MATLAB onehotdecode: the class of the largest value along the feature
 * dim (the first on ties; NaN wins), as int32: the 0-based position, or
 * classes[position] when opts->classes is given (it must then list one
 * value per element of the feature dim). The feature dim keeps size 1 and
 * every label. Scores of no observations (C x 0) give an empty result
 * (1 x 0), as MATLAB's; a feature dim of size 0 is DLA_ERR_SHAPE. Not
 * differentiable. opts->dtype is not read. */
DLA_API dla_tensor *dla_onehotdecode(dla_tensor *scores, const dla_onehot_options *opts);

/* ------------------------------------------------------------ reshaping */

/* MATLAB cat(dim, t[0], ..., t[n-1]): joins along dim (1-based; a dim past
 * the inputs' ndims stacks them, as cat(3, A, B) of matrices does). All
 * inputs share dtype, device and format (all unformatted, or all with the
 * same labels; along a new dim a formatted result needs a label there, so
 * stacking formatted tensors past their labels is DLA_ERR_FORMAT), and
 * every dim but dim agrees. The result is a dense copy. Differentiable:
 * each input's gradient is a slice of the result's. n >= 1. Sizes along
 * dim that add up past INT64_MAX (empty inputs can be that long) are
 * DLA_ERR_INVALID_ARGUMENT. As in MATLAB, an unformatted 0x0 tensor ([])
 * among others is skipped, whatever their dims and formats (cat(3, [], A)
 * is A: a result grown in a loop may start as []); its gradient, if asked
 * for, is that of a tensor the result does not depend on. */
DLA_API dla_tensor *dla_cat(int dim, int n, dla_tensor *const *tensors);

/* Pads x with value: before[i] elements ahead of and after[i] behind dim
 * i+1, for i < ndims (ndims may exceed x's dims: those count as size 1,
 * and the result has that many dims). before/after >= 0; NULL means all 0.
 * Format and dtype are kept (value converted to it as dla_full converts
 * it). The result is a dense copy. Differentiable in
 * x: the gradient is the interior slice of the result's gradient. */
DLA_API dla_tensor *dla_pad(dla_tensor *x, int ndims, const int64_t *before, const int64_t *after,
                            double value);

/* MATLAB x(:, ..., idx, ..., :) along one dim (1-based) with a list of
 * 0-based positions: index is an int32 tensor (any dims; its elements in
 * column-major order form the list, repeats allowed). The result has x's
 * dims with numel(index) along dim, and x's format and dtype. A dim past
 * an unformatted x's (up to DLA_MAX_DIMS) is of size 1, as in MATLAB. A position
 * outside 0..size(x, dim)-1 is DLA_ERR_INVALID_ARGUMENT (reported by the
 * kernel; for an empty result, which launches none, read on the host).
 * Differentiable in x: the gradient adds each element of the result's
 * gradient into the position it came from (repeats add up).
 * For a regular range use dla_slice, a view with a cheaper backward. */
DLA_API dla_tensor *dla_index(dla_tensor *x, int dim, dla_tensor *index);

/* ------------------------------------------------------------- comparisons */

/* Elementwise a == b, a ~= b, a < b, a <= b, a > b, a >= b with MATLAB's
 * implicit expansion: logical (DLA_BOOL) results with the broadcast dims
 * and the operands' format (formatted operands must agree). Any dtypes may
 * be compared, by their values, exactly (operands of different dtypes, or
 * integer ones, go through single or double, whichever holds both exactly,
 * a few million elements at a time: no copy of a whole large operand is
 * made); NaN compares false except in ne. Not differentiable: no
 * gradient flows through a comparison. Errors as dla_add's. */
DLA_API dla_tensor *dla_eq(dla_tensor *a, dla_tensor *b);
DLA_API dla_tensor *dla_ne(dla_tensor *a, dla_tensor *b);
DLA_API dla_tensor *dla_lt(dla_tensor *a, dla_tensor *b);
DLA_API dla_tensor *dla_le(dla_tensor *a, dla_tensor *b);
DLA_API dla_tensor *dla_gt(dla_tensor *a, dla_tensor *b);
DLA_API dla_tensor *dla_ge(dla_tensor *a, dla_tensor *b);

/* cond ? a : b elementwise, with implicit expansion of all three (MATLAB:
 * Z = B; Z(cond) = A(cond), written as one op). cond is logical (a numeric
 * cond counts as nonzero); a and b share a float dtype, which the result
 * has. Differentiable in a and b: a's gradient is where(cond, g, 0) summed
 * to a's dims, b's is where(cond, 0, g). Errors as dla_add's, and
 * DLA_ERR_DTYPE for a and b of different or non-float dtypes. */
DLA_API dla_tensor *dla_where(dla_tensor *cond, dla_tensor *a, dla_tensor *b);

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_LOSS_H */
