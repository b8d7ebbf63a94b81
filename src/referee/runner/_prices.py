"""What a judge call cost: the user's prices when given, else the provider's token counts priced by
``genai-prices`` (the pydantic team's maintained price database, with cached-input and batch rates).

A cost is never invented: a model the database does not know, or a local server, has no cost (``None``), and
the run says so once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

COST_DECIMALS = 10
BATCH_DISCOUNT = 0.5
"""OpenAI, Anthropic and Gemini all bill batch jobs at half the standard rates; used with the user's own prices
and for models whose batch rate the database does not list."""


def database_version() -> str | None:
    """``genai-prices <version>``, or None when the package is not importable."""
    try:
        from importlib.metadata import version

        return f"genai-prices {version('genai-prices')}"
    except Exception:  # noqa: BLE001 - a broken install means no database, never a failed run
        return None


@dataclass
class Pricer:
    """Prices of one judge endpoint. ``provider_id`` is its id in genai-prices (None: no public price)."""

    provider_id: str | None
    input_per_mtok: float | None = None
    output_per_mtok: float | None = None
    _unknown: set[str] = field(default_factory=set)
    _warned: bool = False

    @property
    def user_prices(self) -> bool:
        return self.input_per_mtok is not None and self.output_per_mtok is not None

    @property
    def source(self) -> str | None:
        """What prices this run: ``user``, ``genai-prices <version>``, or None (no cost is reported)."""
        if self.user_prices:
            return "user"
        if self.provider_id is None:
            return None
        return database_version()

    def cost(self, model: str | None, input_tokens: int | None, output_tokens: int | None, *,
             cache_read_tokens: int | None = None, batch: bool = False, fallback_model: str | None = None
             ) -> float | None:
        if input_tokens is None or output_tokens is None:
            return None
        if self.user_prices:
            assert self.input_per_mtok is not None and self.output_per_mtok is not None
            cost = input_tokens / 1e6 * self.input_per_mtok + output_tokens / 1e6 * self.output_per_mtok
            # Rounded: float noise (0.0009600000000000001) must not reach result files; 1e-10 USD is far below
            # the cost of one token at any real price.
            return round(cost * (BATCH_DISCOUNT if batch else 1.0), COST_DECIMALS)
        if self.provider_id is None:
            return None
        for ref in dict.fromkeys(m for m in (model, fallback_model) if m):
            if ref in self._unknown:
                continue
            price = self._database_cost(ref, input_tokens, output_tokens, cache_read_tokens, batch)
            if price is not None:
                return price
            self._unknown.add(ref)
        self._warn(model or fallback_model or "?")
        return None

    def _database_cost(self, ref: str, input_tokens: int, output_tokens: int, cache_read: int | None,
                       batch: bool) -> float | None:
        try:
            from genai_prices import Usage, calc_price
        except ImportError:
            return None
        usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens,
                      cache_read_tokens=min(cache_read or 0, input_tokens))
        try:
            standard = calc_price(usage, ref, provider_id=self.provider_id)
            if not batch:
                return round(float(standard.total_price), COST_DECIMALS)
            batched = calc_price(usage, ref, provider_id=self.provider_id, price_context={"processing": "batch"})
        except (LookupError, ValueError):
            return None
        total = float(batched.total_price)
        if batched.total_price == standard.total_price:  # no batch rate listed for this model
            total *= BATCH_DISCOUNT
        return round(total, COST_DECIMALS)

    def _warn(self, model: str) -> None:
        if not self._warned:
            self._warned = True
            log.warning("warning: %s has no price for model '%s' at '%s'; cost is not reported (give "
                        "--input-price-per-mtok and --output-price-per-mtok)",
                        database_version() or "the price database", model, self.provider_id)


def per_mtok(provider: str, model: str | None, *, base_url: str | None = None, batch: bool = False
             ) -> tuple[float, float] | None:
    """(input, output) USD per million tokens of a judge from the database, for estimates made before any call
    (``referee run --dry-run``); None when there is no public price (local servers, unknown models)."""
    from ..providers import LOCAL_SERVERS, provider_class

    if provider in LOCAL_SERVERS:
        return None
    try:
        cls = provider_class(provider)
    except Exception:  # noqa: BLE001 - an unknown name is reported elsewhere
        return None
    if provider == "openai" and base_url and not base_url.startswith("https://api.openai.com"):
        return None
    pricer = Pricer(cls.price_provider)
    ref = model or cls.default_model
    if pricer.provider_id is None or not ref:
        return None
    pricer._warned = True  # an estimate without a price says so itself
    ins = pricer.cost(ref, 1_000_000, 0, batch=batch)
    outs = pricer.cost(ref, 0, 1_000_000, batch=batch)
    return None if ins is None or outs is None else (ins, outs)
