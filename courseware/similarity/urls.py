from django.urls import path

from courseware.similarity import views

urlpatterns = [
    path("", views.similarity_index, name="similarity-index"),
    path("<int:run_id>/", views.similarity_run, name="similarity-run"),
    path("<int:run_id>/progress", views.similarity_progress, name="similarity-progress"),
    path("<int:run_id>/pairs/<int:pair_id>/", views.similarity_pair, name="similarity-pair"),
]
