"""Pipeline parallelism (issue 20 item 2, docs/pipeline.md): a pipelined
run matches the reference, its events name their stage, and each
microbatch's activation crosses the stage boundary as one send and one
recv of the block each rank holds."""
import tpsim

CONFIG = {
    "tpsim": 1,
    "mesh": {"shape": [2, 2], "dim_names": ["pp", "tp"]},
    "model": [
        {"name": "fc1", "type": "linear", "in_features": 4,
         "out_features": 8},
        {"name": "act", "type": "relu"},
        {"name": "fc2", "type": "linear", "in_features": 8,
         "out_features": 4},
    ],
    "plan": {"fc1": "colwise", "fc2": "rowwise"},
    "input": {"shape": [4, 4]},
    "mode": "training",
    "steps": 2,
    "pipeline": {"dim": "pp", "microbatches": 2, "schedule": "gpipe"},
}


def test_pipeline_events_name_their_stage_and_match_the_reference():
    trace = tpsim.run(CONFIG)
    assert trace.result.match, trace.run_result.verdict
    events = list(trace.events())
    assert all(e.pipeline is not None for e in events)
    # fc1 and act on stage 0 (the even split: 40 parameters, then fc2's
    # 36), fc2 on stage 1.
    stage = {e.module: e.pipeline["stage"] for e in events
             if e.module in ("fc1", "act", "fc2")}
    assert stage == {"fc1": 0, "act": 0, "fc2": 1}
    sends = [e for e in events if e.op == "send"]
    recvs = [e for e in events if e.op == "recv"]
    # 2 steps x 2 microbatches x (forward, backward).
    assert len(sends) == len(recvs) == 8
    # act.out is shard(-1) over tp: (2, 4) a rank, 32 bytes.
    assert {e.bytes_per_rank for e in sends} == {32}
    assert {e.bytes_per_rank for e in recvs} == {0}
    assert {(e.phase, e.pipeline["stage"], e.pipeline["peer"])
            for e in sends} == {("forward", 0, 1), ("backward", 1, 0)}
