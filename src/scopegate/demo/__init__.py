"""The worked example behind ``make demo``: a synthetic ticket corpus and scripted agents."""
