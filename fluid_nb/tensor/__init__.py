"""Values at run time and what they are made of: data types (``dtypes``), places
(``place``: where a tensor lives and which array module computes on it), tensors
(``tensor``: LoDTensor, LoDTensorArray, SelectedRows) and the LoD rank table. The bottom
layer with ``memory`` (the arena tensors are allocated from): everything else imports it,
and it imports nothing of fluid_nb's but ``errors``."""
