"""The job matrix: recipes -> BenchmarkJob rows, eval selection, selection, InferenceX import."""
