"""The serialized objects a real client makes have exactly the sizes params/sizes.py states
(the bench reports check the query, response, public parameters and database; this is the
client state, which no report carries)."""

from __future__ import annotations

from spiralpir.optimizer.build import builder
from spiralpir.optimizer.params import sizes
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.service.binding import Build, ClientKeys


def test_client_objects_have_the_stated_sizes(demo_inst: builder.Instance) -> None:
    build = Build(demo_inst)
    p = Parameters.from_literal(build.params)
    keys = ClientKeys.new(build.lib)
    try:
        assert len(keys.save()) == sizes.client_state_bytes(p)
        assert len(keys.public_params()) == sizes.public_params_bytes(p)
        assert len(keys.query(0)) == sizes.query_bytes(p)
    finally:
        keys.close()
