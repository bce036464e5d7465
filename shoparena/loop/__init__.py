"""The closed loop (issue 15): an arena season → its judged firehose → a corpus → post-training → the
distilled model back in the arena as a miner → one more race → one report. `run_loop` drives it;
`LoopLayout` says where each stage keeps its files."""
