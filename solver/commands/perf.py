"""`clusterplan perf`: evaluate or search the parallel configuration of a training job."""

from __future__ import annotations

from typing import Annotated

import typer

from solver.cli_common import JsonFlag


def opt(name: str, help_: str):
    """A typer option (module level: string annotations resolve in module globals)."""
    return typer.Option(name, help=help_)


def register(app: typer.Typer) -> None:
    @app.command()
    def perf(
        workload: Annotated[str, opt("--workload", "Workload id or file.")],
        gpu: Annotated[str, opt("--gpu", "GPU system id from the catalog.")],
        gpus: Annotated[int, opt("--gpus", "GPUs given to the job.")],
        tp: Annotated[int | None, opt("--tp", "Tensor-parallel degree.")] = None,
        pp: Annotated[int | None, opt("--pp", "Pipeline-parallel degree.")] = None,
        dp: Annotated[int | None, opt("--dp", "Data-parallel degree.")] = None,
        cp: Annotated[int | None, opt("--cp", "Context-parallel degree.")] = None,
        ep: Annotated[int | None, opt("--ep", "Expert-parallel degree.")] = None,
        vpp: Annotated[int | None, opt("--vpp", "Virtual pipeline stages.")] = None,
        micro_batch: Annotated[int | None, opt("--micro-batch", "Sequences per micro-batch.")
                               ] = None,
        recompute: Annotated[str | None, opt("--recompute", "none | selective | full")] = None,
        sharding: Annotated[str | None, opt("--sharding", "Data-parallel sharding: none | "
                                            "optimizer | gradients | full (ZeRO 0-3).")
                            ] = None,
        fsdp: Annotated[bool, opt("--fsdp", "FSDP / ZeRO-3 (= --sharding full).")] = False,
        etp: Annotated[int | None, opt("--etp", "Expert tensor-parallel degree (default "
                                       "--tp).")] = None,
        profile: Annotated[str | None, opt("--profile", "Software profile: tuned-2025 "
                                           "(default) | megatron-2021.")] = None,
        switch: Annotated[str | None, opt("--switch", "Scale-out switch id (in-network "
                                          "reduction, pod size).")] = None,
        oversubscription: Annotated[float, opt("--oversubscription",
                                               "Oversubscription between pods.")] = 1.0,
        pod_gpus: Annotated[int | None, opt("--pod-gpus", "GPUs per non-blocking pod.")
                            ] = None,
        as_json: JsonFlag = False,
    ) -> None:
        """Step time, throughput, MFU and memory of a job; searches omitted degrees."""
        from solver.api import perf as perf_api
        from solver.cli_common import emit_json, run, stdout

        degrees = {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "ep": ep, "vpp": vpp,
                   "micro_batch": micro_batch}
        doc = run(lambda: perf_api(workload, gpu, gpus, degrees=degrees, recompute=recompute,
                                   switch=switch, oversubscription=oversubscription,
                                   pod_gpus=pod_gpus, sharding="full" if fsdp else sharding,
                                   etp=etp, profile=profile)).to_dict()
        if as_json:
            emit_json(doc)
            return
        p = doc["parallelism"]
        stdout.print(f"{doc['workload']} on {gpus} x {gpu} ({doc['mode']}): "
                     f"tp={p['tp']} pp={p['pp']} dp={p['dp']} cp={p['cp']} ep={p['ep']} "
                     f"vpp={p['vpp']} mb={p['micro_batch']} recompute={p['recompute']} "
                     f"sharding={p['sharding']} etp={p['etp']} ({doc['profile']})")
        low, high = doc["tokens_per_s_band"]
        stdout.print(f"  step {doc['step_time_s']:.3f} s, {doc['tokens_per_s']:,.0f} tokens/s "
                     f"(p10-p90 {low:,.0f}-{high:,.0f}), "
                     f"MFU {doc['mfu']:.1%}, HFU {doc['hfu']:.1%}, "
                     f"{doc['memory_gib_per_gpu']:.1f} GiB/GPU "
                     f"({'fits' if doc['fits'] else 'DOES NOT FIT'})")
        for key, value in doc["breakdown"].items():
            stdout.print(f"  {key:16s} {value:10.3f} s")
