/*
 * cuda_probe.c - what a program sees of the devices: the default device
 * and why, dla_device_get(argv[1]) when given, and the device
 * dla_training_device gives for "gpu" and "auto", each on one line with
 * the error when it fails. tests/cuda_without_driver.sh runs it with the
 * cuda plugin on the path of a machine without a driver, and
 * tests/device_priority.sh with the testmem plugin at other priorities.
 */
#include <dlaccel.h>
#include <dlaccel/train.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    dla_device *dev = dla_device_default();
    printf("default: %s (%s)\n", dev ? dla_device_name(dev) : "none", dla_device_default_reason());
    if (argc > 1) {
        dev = dla_device_get(argv[1]);
        if (dev)
            printf("get %s: %s\n", argv[1], dla_device_name(dev));
        else
            printf("get %s: failed: %s\n", argv[1], dla_last_error());
    }
    static const char *const envs[] = {"gpu", "auto"};
    for (int i = 0; i < 2; i++) {
        dev = NULL;
        dla_status st = dla_training_device(envs[i], &dev);
        if (st == DLA_OK)
            printf("training %s: %s\n", envs[i], dla_device_name(dev));
        else
            printf("training %s: failed (%s): %s\n", envs[i], dla_status_str(st), dla_last_error());
    }
    return 0;
}
