//! Simulated cluster actors: nodes, a scheduler and a kubelet (being written).
