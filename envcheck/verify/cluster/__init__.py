"""verify cluster: reach a Dask cluster, gather every process's facts, judge them with
verify/across/, run the smoke tests."""
