"""PyTorch's CUDA-graph figures for the cuda plugin's comparison, beside ../shared/peers/cnn_cuda.py.

cnn_cuda.py's torch.compile(mode="reduce-overhead") training step fails under PyTorch 2.11 ("accessing
tensor output of CUDAGraphs that has been overwritten by a subsequent run", even with
cudagraph_mark_step_begin before each step: pytorch/pytorch#169545). So the CUDA-graph reference is
measured here two ways that work:

  graph     the eager step (zero_grad, forward, loss, backward, SGD momentum 0.9) captured whole with
            torch.cuda.graph, as PyTorch's CUDA-graphs documentation captures a training step, and
            replayed after copying the batch into the captured inputs;
  compiled  (inference only) torch.compile(mode="reduce-overhead") of the network in eval mode.

Same networks (imported from cnn_cuda.py, copied beside this file), same timing protocol (CUDA synchronize
around rounds of steps after warm-up, median and min over rounds). Prints one JSON object.

    python3 torch_cuda_graph.py --batches 128,1024
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

from cnn_cuda import Mlp, Net


def timed(fn, args_list, iters, rounds, warmup):
    for i in range(warmup):
        fn(*args_list[i % len(args_list)])
    torch.cuda.synchronize()
    out = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(iters):
            fn(*args_list[i % len(args_list)])
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) * 1e3 / iters)
    return round(statistics.median(out), 4), round(min(out), 4)


def graphed_step(model, loss_of, x0, y0):
    """The whole training step as one CUDA graph; returns step(x, y) that copies and replays."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    sx, sy = x0.clone(), y0.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as the documentation asks
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            loss_of(model(sx), sy).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        loss = loss_of(model(sx), sy)
        loss.backward()
        opt.step()

    def step(x, y):
        sx.copy_(x)
        sy.copy_(y)
        g.replay()
        return loss

    return step


def graphed_infer(model, x0):
    sx = x0.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.inference_mode():
        for _ in range(3):
            model(sx)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g), torch.inference_mode():
        y = model(sx)

    def run(x, _y):
        sx.copy_(x)
        g.replay()
        return y

    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", default="128,1024")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--no-compile", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    res = {"torch": torch.__version__, "device": torch.cuda.get_device_name(),
           "protocol": f"median, min over {a.rounds} rounds of {a.iters} steps, after 20 warm-up steps",
           "cnn_train_ms": {}, "cnn_infer_ms": {}, "mlp_train_us": {}, "errors": {}}
    for b in [int(s) for s in a.batches.split(",")]:
        data = [(torch.randn(b, 1, 28, 28, device="cuda"), torch.randint(0, 10, (b,), device="cuda"))
                for _ in range(8)]
        net = Net().cuda()
        step = graphed_step(net, F.cross_entropy, *data[0])
        res["cnn_train_ms"][f"b{b}_graph"] = timed(step, data, a.iters, a.rounds, 20)
        net.eval()
        res["cnn_infer_ms"][f"b{b}_graph"] = timed(graphed_infer(net, data[0][0]), data, a.iters, a.rounds, 20)
        if not a.no_compile:
            try:
                g = torch.compile(net, mode="reduce-overhead")
                with torch.inference_mode():
                    res["cnn_infer_ms"][f"b{b}_reduce-overhead"] = timed(lambda x, y: g(x), data, a.iters,
                                                                         a.rounds, 20)
            except Exception as e:  # reported, not hidden
                res["errors"][f"infer_b{b}_reduce-overhead"] = str(e)[:300]
    mdata = [(torch.randn(1, 4, device="cuda"), torch.randn(1, 1, device="cuda")) for _ in range(8)]
    step = graphed_step(Mlp().cuda(), F.mse_loss, *mdata[0])
    ms = timed(step, mdata, 200, a.rounds, 50)
    res["mlp_train_us"]["graph"] = (round(ms[0] * 1e3, 1), round(ms[1] * 1e3, 1))
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
