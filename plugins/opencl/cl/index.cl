/*
 * index.cl - gather and scatter_add along one dim.
 *
 * The host coalesces the slice (every dim but the indexed one) into a
 * space of at most two dims; the third dim of the launch is the position
 * i along the indexed dim (the slice views have stride 0 there). Gather moves bit
 * patterns, so it takes every dtype. scatter_add never lets two work-items
 * add into one element: the host groups the positions by target (list
 * start[u] .. start[u+1] of target targets[u], in index order), and
 * work-item (s, u) adds them into y in that order, as the cpu plugin does.
 */
#define DEF_GATHER(T, sfx)                                                     \
    __kernel void gather_##sfx(dla_shape sh, __global T *y, dla_vw vy,         \
                               __global const T *x, dla_vw vx, long ystep,     \
                               long xstep, __global const int *index,          \
                               long ioff, long istep)                          \
    {                                                                          \
        DLA_ELEMENT(sh, c);                                                    \
        const long i = c[2];                                                   \
        const long from = index[ioff + i * istep];                             \
        y[dla_at(&vy, c) + i * ystep] = x[dla_at(&vx, c) + from * xstep];      \
    }
DEF_GATHER(uchar, 1)
DEF_GATHER(uint, 4)
DEF_GATHER(ulong, 8)

#define DEF_SCATTER(T)                                                         \
    __kernel void scatter_add_##T(dla_shape sh, __global T *y, dla_vw vy,      \
                                  __global const T *x, dla_vw vx, long ystep,  \
                                  long xstep, __global const int *targets,     \
                                  __global const int *start,                   \
                                  __global const int *list)                    \
    {                                                                          \
        DLA_ELEMENT(sh, c);                                                    \
        const long u = c[2];                                                   \
        const long at = dla_at(&vy, c) + (long)targets[u] * ystep;             \
        const long xb = dla_at(&vx, c);                                        \
        T acc = y[at];                                                         \
        for (int j = start[u]; j < start[u + 1]; j++)                          \
            acc += x[xb + (long)list[j] * xstep];                              \
        y[at] = acc;                                                           \
    }
DEF_SCATTER(float)
#ifdef DLA_FP64
DEF_SCATTER(double)
#endif
