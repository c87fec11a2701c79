/*
 * cuda_fastdiv.c - the cuda plugin's division by a constant
 * (plugins/cuda/fastdiv.h) against the division instruction, on the host:
 * the same 32-bit arithmetic the kernels do. Every divisor up to 70000,
 * powers of two and their neighbours, and random divisors below 2^31; for
 * each, the dividends at the edges (0, 1, 2^31 - 1, each multiple of the
 * divisor near them and one either side) and random ones.
 */
#include "plugins/cuda/fastdiv.h"

#include <stdio.h>

static uint64_t state = 0x2026112604u;

static uint32_t rnd31(void)
{
    state = state * 6364136223846793005u + 1442695040888963407u;
    return (uint32_t)(state >> 33);
}

static long checked, wrong;

static void check(uint32_t n, uint32_t u, uint32_t mul, int32_t shift)
{
    if (u > 0x7fffffffu)
        return;
    checked++;
    const uint32_t got = dla__cu_fastdiv_host(u, mul, shift), want = u / n;
    if (got != want && wrong++ < 10)
        printf("# %u / %u: got %u, want %u (mul %u, shift %d)\n", u, n, got, want, mul, shift);
}

static void divisor(uint32_t n)
{
    if (n == 0 || n > 0x7fffffffu)
        return;
    uint32_t mul;
    int32_t shift;
    dla__cu_fastdiv_make(n, &mul, &shift);
    const uint32_t top = 0x7fffffffu, last = top / n * n;
    const uint32_t edges[] = {0, 1, 2, n - 1, n, n + 1, 2 * n - 1, 2 * n, top, top - 1,
                              last, last - 1, last + n - 1, last - n, last - n + 1};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        check(n, edges[i], mul, shift);
    for (int i = 0; i < 200; i++)
        check(n, rnd31(), mul, shift);
}

int main(void)
{
    int tests = 0;
    printf("1..4\n");
    for (uint32_t n = 1; n <= 70000; n++)
        divisor(n);
    printf("%s %d - every divisor up to 70000\n", wrong ? "not ok" : "ok", ++tests);
    long before = wrong;
    for (int s = 1; s < 31; s++)
        for (int d = -3; d <= 3; d++)
            divisor((uint32_t)((1u << s) + d));
    printf("%s %d - powers of two and their neighbours\n", wrong > before ? "not ok" : "ok",
           ++tests);
    before = wrong;
    for (int i = 0; i < 20000; i++) {
        const uint32_t n = rnd31();
        divisor(n ? n : 1);
    }
    printf("%s %d - random divisors below 2^31\n", wrong > before ? "not ok" : "ok", ++tests);
    uint32_t mul;
    int32_t shift;
    dla__cu_fastdiv_make(0, &mul, &shift);
    const int safe = mul == 1 && shift == 0;
    printf("%s %d - a divisor out of range gets the constants of 1\n", safe ? "ok" : "not ok",
           ++tests);
    printf("# %ld divisions checked, %ld wrong\n", checked, wrong);
    return wrong || !safe ? 1 : 0;
}
