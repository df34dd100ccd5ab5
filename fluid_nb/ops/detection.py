"""Detection op family: prior boxes, box coding, IoU, non-maximum suppression, RoI pooling."""
