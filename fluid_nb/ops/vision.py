"""Vision op family beyond conv.py and norm.py: 3-D convolution and pooling, resizing, ..."""
