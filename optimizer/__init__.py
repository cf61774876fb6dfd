"""spiralpir optimizer, in the layers of its flow: params -> models -> plan -> codegen -> build
-> measure | service -> cli (each imports only the layers before it; README "Layout")."""
