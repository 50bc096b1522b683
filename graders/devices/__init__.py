"""What differs between a CPU and a CUDA device, behind one interface."""
