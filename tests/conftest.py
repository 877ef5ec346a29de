"""Choose this process's NIXL build before SGLang's tests import ``nixl``: the object-store tests
need the build whose OBJ plugin loads here (see ``reference_backend.agents``)."""

from reference_backend import agents

agents.nixl_api()
