"""The CDK app that deploys gpu-dev. It refers to handlers by path and never imports them."""
