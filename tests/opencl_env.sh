# opencl_env.sh - sourced by the opencl test scripts: puts the build tree's
# opencl manifest (plugins/opencl, its own folder) first on the plugin
# path, and skips the script (TAP) when no OpenCL device can be had, as on
# a machine without an ICD such as pocl-opencl-icd.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/plugins/opencl:$DLACCEL_PLUGIN_PATH"
export DLACCEL_PLUGIN_PATH
if ! DLACCEL_DEVICE=opencl "$DLA_TEST_BUILDDIR/tools/dlaccel" devices >/dev/null 2>&1; then
    echo "1..0 # SKIP no OpenCL device (DLACCEL_DEVICE=opencl dlaccel devices says why)"
    exit 0
fi
