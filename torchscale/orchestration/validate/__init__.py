"""`torchscale validate`: does this node meet the requirements for distributed training?"""
