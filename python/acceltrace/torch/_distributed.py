"""distributedInfo in torch.profiler traces without torch.distributed.

HolisticTraceAnalysis and the TensorBoard plugin read a trace's rank from
its top-level ``distributedInfo``. torch.profiler writes it only once
``torch.distributed`` is initialised; a rank started by torchrun, mpirun or
srun that profiles before (or without) ``init_process_group`` gets none,
and two such traces in one folder collapse into rank 0. This patch lets
``_KinetoProfile._get_distributed_info`` fall back on the launcher's
variables (the same rules as libacceltrace's, ``src/core/dist.c``) and adds
``local_rank`` where torch's own answer lacks it.
"""

import os

# (launcher, rank, world size, local rank) variables, first match wins
LAUNCHERS = (
    ("torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"),
    ("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    ("pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
    ("slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
)


def _int(env, name):
    v = env.get(name, "")
    return int(v) if v.isdigit() else None


def detect(env=None):
    """The rank of this process from launcher variables, as a
    distributedInfo dict, or None."""
    env = os.environ if env is None else env
    for launcher, rank, size, local in LAUNCHERS:
        r = _int(env, rank)
        if r is None:
            continue
        info = {"rank": r}
        if _int(env, local) is not None:
            info["local_rank"] = _int(env, local)
        if _int(env, size) is not None:
            info["world_size"] = _int(env, size)
        info["launcher"] = launcher
        return info
    return None


def apply_distributed_info_patch():
    from torch.profiler.profiler import _KinetoProfile
    original = _KinetoProfile._get_distributed_info
    if getattr(original, "_acceltrace", False):
        return

    def _get_distributed_info(self):
        info = original(self)
        found = detect()
        if info is None:
            return found
        if found and "local_rank" in found and "local_rank" not in info:
            info["local_rank"] = found["local_rank"]
        return info

    _get_distributed_info._acceltrace = True
    _KinetoProfile._get_distributed_info = _get_distributed_info
