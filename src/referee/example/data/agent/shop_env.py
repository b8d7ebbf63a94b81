"""The example's stateful environment: a shop's orders, which the agent under test can look up and refund."""

from __future__ import annotations

from typing import Any

from referee.episodes import tool


class Shop:
    def __init__(self) -> None:
        self.state: dict[str, Any] = {
            "orders": {"A1": {"status": "delivered", "price": 12.5}, "B2": {"status": "shipped", "price": 40.0}},
            "refunds": [],
        }

    @tool
    def get_order(self, order_id: str) -> dict[str, Any]:
        """Look up an order by its id."""
        order = self.state["orders"].get(order_id)
        if order is None:
            raise KeyError(f"no order {order_id}")
        return {"order_id": order_id, **order}

    @tool
    def refund(self, order_id: str) -> str:
        """Refund a delivered order."""
        order = self.state["orders"][order_id]
        if order["status"] != "delivered":
            raise ValueError(f"order {order_id} is {order['status']}, not delivered")
        order["status"] = "refunded"
        self.state["refunds"].append({"order_id": order_id, "amount": order["price"]})
        return f"refunded {order['price']:.2f}"
