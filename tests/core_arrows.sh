#!/bin/sh
# The core's arrows point one way (issue 13): the runtime's lower files
# (tensor.c, launch.c, tape.c, transfer.c, op_run.c, hooks.c) call neither
# the replay planner nor the trace recorder, and include neither's header;
# they announce through core/hooks.h and the two subscribe. And nothing
# outside core/ includes core/device.h: tools, benchmarks and tests reach a
# device's table through <dlaccel/device_table.h>. A static check over the
# sources, one TAP line per file and one for device.h.
top="${srcdir:-.}"
src="$top/core"
files="tensor launch tape transfer op_run hooks"
set -- $files
echo "1..$(($# + 1))"
n=0
status=0
for f in $files; do
    n=$((n + 1))
    if [ ! -f "$src/$f.c" ]; then
        echo "not ok $n - core/$f.c is missing"
        status=1
        continue
    fi
    # Calls of dla__plan_*, dla__plans_*, dla__capture_*, dla__trace_*, and
    # includes of the planner's and the traces' headers.
    hits=$(grep -nE 'dla__(plans?|capture|trace)_[a-z_]*[[:space:]]*\(|#include "core/(plan|plan_impl|trace)\.h"' \
        "$src/$f.c")
    if [ -z "$hits" ]; then
        echo "ok $n - core/$f.c names neither the planner nor the recorder"
    else
        echo "not ok $n - core/$f.c calls the planner or the recorder by name:"
        echo "$hits" | sed 's/^/# /'
        status=1
    fi
done
n=$((n + 1))
outside=$(grep -rln --include='*.c' --include='*.h' '#include "core/device.h"' "$top/tools" "$top/bench" "$top/tests" \
    "$top/examples" "$top/nn" "$top/plugins" "$top/fuzz" 2>/dev/null)
if [ -z "$outside" ]; then
    echo "ok $n - no core/device.h include outside core/"
else
    echo "not ok $n - core/device.h included outside core/:"
    echo "$outside" | sed 's/^/# /'
    status=1
fi
exit $status
