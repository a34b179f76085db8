"""The core: instance, topology, cost model, independent checker, scopes, results,
parameters, method specs, backends and file formats. It imports no method."""
