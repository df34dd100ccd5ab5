"""(family module; ops defined with def_op)"""
