"""Parts of the model-free reference agents: query understanding, candidate matching, the shared policy."""
