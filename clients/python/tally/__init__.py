"""Client for the Tally API: ``Tally(api_key=..., base_url=...).track({...})``."""

from .client import Tally, __version__
from .errors import TallyError
from .webhooks import verify_webhook

__all__ = ["Tally", "TallyError", "verify_webhook", "__version__"]
