"""The methods: one spec per method module (heuristics, formulations,
decompositions, bounds). A method imports the core and shared model helpers,
never the registry."""
