"""`envcheck recipe import`: a conda environment.yml -> the recipe it reads as."""
