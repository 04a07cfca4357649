import httpx


async def test_live(client: httpx.AsyncClient) -> None:
    r = await client.get("/api/v1/live")
    assert r.status_code == 200
    assert r.json()["alive"] is True
