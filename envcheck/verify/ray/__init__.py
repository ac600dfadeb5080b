"""`envcheck verify ray`: a Ray cluster judged as a Dask cluster is, with Ray as the vehicle.

A task pinned to each node collects that node's facts (the facts package, shipped by value:
nodes need not have envcheck), one ``num_gpus=1`` task per GPU Ray advertises reports the GPU
it got, and optionally a Ray Train ``TorchTrainer`` all-reduces a known answer. The judgements
are pure functions of those facts (checks.py); Ray is imported only here, lazily.
"""
