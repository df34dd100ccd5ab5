"""Linear-chain CRF op family: linear_chain_crf, crf_decoding, chunk_eval."""
